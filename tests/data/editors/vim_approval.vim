" Vim 9's own LSP channel drives `agent-bridge serve`: a session whose run asks two
" approvals, each answered from the channel callback by replying to the bridge's request.
" Env: AB_CMD (the bridge argv, JSON), AB_OUT (where to write the outcome, JSON).
" Run: vim -Nu NONE -i NONE -es -S vim_approval.vim
let s:state = #{requestIds: [], pendingIdsAtRequest: [], text: '', terminal: '', errors: [],
      \ runStartReply: {}}
let s:pending = {}

func s:OnMessage(ch, msg) abort
  if has_key(a:msg, 'method') && a:msg.method ==# 'interaction/request'
    call add(s:state.requestIds, a:msg.id)
    call add(s:state.pendingIdsAtRequest, keys(s:pending))
    call ch_sendexpr(a:ch, #{id: a:msg.id,
          \ result: #{kind: 'approval', decision: 'allow', mode: 'once'}})
  elseif has_key(a:msg, 'method') && a:msg.method ==# 'event'
    let l:payload = a:msg.params.payload
    if l:payload.type ==# 'text.delta'
      let s:state.text ..= l:payload.text
    elseif l:payload.type =~# '^run\.\(completed\|failed\|interrupted\)$'
      let s:state.terminal = l:payload.type
    endif
  endif
endfunc

func s:OnRunStart(ch, msg) abort
  let s:state.runStartReply = a:msg
  call remove(s:pending, 'run/start')
endfunc

func s:OnErr(ch, line) abort
endfunc

func s:Finish(ok) abort
  let s:state.ok = a:ok
  call writefile([json_encode(s:state)], $AB_OUT)
  if a:ok
    qall!
  endif
  cquit!
endfunc

try
  let s:job = job_start(json_decode($AB_CMD), #{in_mode: 'lsp', out_mode: 'lsp',
        \ err_mode: 'nl', out_cb: function('s:OnMessage'), err_cb: function('s:OnErr')})
  let s:ch = job_getchannel(s:job)
  let s:init = ch_evalexpr(s:ch, #{method: 'initialize', params: #{protocolVersion: 1,
        \ clientInfo: #{name: 'vim', version: string(v:version)},
        \ capabilities: #{interactions: #{approval: v:true}}}}, #{timeout: 20000})
  if empty(s:init) || !has_key(s:init, 'result')
    call add(s:state.errors, 'initialize: ' .. json_encode(s:init))
    call s:Finish(0)
  endif
  call ch_sendexpr(s:ch, #{method: 'initialized'})
  let s:approval = #{type: 'approval', title: 'Run `make`', toolName: 'Bash',
        \ command: 'make', modes: ['once', 'session']}
  let s:script = #{steps: [
        \ extend(copy(s:approval), #{onAllow: [#{type: 'text', text: 'first allowed. '}]}),
        \ extend(copy(s:approval), #{onAllow: [#{type: 'text', text: 'second allowed.'}]})]}
  let s:created = ch_evalexpr(s:ch, #{method: 'session/create',
        \ params: #{provider: 'scripted', options: #{script: s:script}}}, #{timeout: 20000})
  let s:sid = s:created.result.session.sessionId
  let s:pending['run/start'] = 1
  call ch_sendexpr(s:ch, #{method: 'run/start',
        \ params: #{sessionId: s:sid, input: #{text: 'build it'}}},
        \ #{callback: function('s:OnRunStart')})
  let s:waited = 0
  while s:state.terminal ==# '' && s:waited < 30000
    sleep 20m
    let s:waited += 20
  endwhile
  let s:shutdown = ch_evalexpr(s:ch, #{method: 'shutdown'}, #{timeout: 20000})
  call ch_sendexpr(s:ch, #{method: 'exit'})
  call s:Finish(s:state.terminal ==# 'run.completed')
catch
  call add(s:state.errors, v:exception .. ' at ' .. v:throwpoint)
  call s:Finish(0)
endtry
