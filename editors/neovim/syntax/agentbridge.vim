" The agent-bridge chat buffer (filetype agentbridge).
if exists('b:current_syntax')
  finish
endif
syntax match agentBridgeTitle   /^# .*/
syntax match agentBridgeHeading /^## .*/
syntax match agentBridgeBlock   /^▸ .*/
syntax match agentBridgeBody    /^  │ .*/
syntax match agentBridgeAsk     /^? .*/
syntax match agentBridgeSettled /^→ .*/
syntax match agentBridgeDone    /^✓ .*/
syntax match agentBridgeFailed  /^✗ .*/
syntax match agentBridgeSession /^— .*/
syntax match agentBridgeNote    /^! .*/
highlight default link agentBridgeTitle   Title
highlight default link agentBridgeHeading Statement
highlight default link agentBridgeBlock   Function
highlight default link agentBridgeBody    Comment
highlight default link agentBridgeAsk     WarningMsg
highlight default link agentBridgeSettled String
highlight default link agentBridgeDone    DiagnosticOk
highlight default link agentBridgeFailed  ErrorMsg
highlight default link agentBridgeSession Special
highlight default link agentBridgeNote    DiagnosticWarn
let b:current_syntax = 'agentbridge'
