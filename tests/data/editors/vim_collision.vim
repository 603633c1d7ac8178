" Vim 9's LSP channel routes a message by its id alone, and on its low 32 bits (it keeps
" the id in a C int): a bridge request whose id, so cut, equals one of Vim's pending
" request ids goes to that request's callback and is never answered.
" This keeps Vim's request id 1 pending (a session/close that waits out the interrupt
" grace of a run that ignores interrupts) while another session's run asks two approvals,
" so the bridge's first two request ids arrive: with ids from 2**40 the second one
" (2**40 + 1) reached the close's callback. Both must reach the channel callback and be
" answered.
" Everything else is sent raw (ch_sendraw, ids from 900001) so that the close is Vim's
" own first request. Env: AB_CMD (the bridge argv, JSON), AB_OUT (the outcome, JSON).
let s:state = #{requestIds: [], closeId: -1, closeCallback: {}, textB: '', terminalB: '',
      \ errors: []}
let s:replies = {}
let s:n = 900000
let s:sidB = ''

func s:OnMessage(ch, msg) abort
  if has_key(a:msg, 'method') && a:msg.method ==# 'interaction/request'
    call add(s:state.requestIds, a:msg.id)
    call ch_sendexpr(a:ch, #{id: a:msg.id,
          \ result: #{kind: 'approval', decision: 'allow', mode: 'once'}})
  elseif has_key(a:msg, 'method') && a:msg.method ==# 'event'
    let l:e = a:msg.params
    if l:e.sessionId ==# s:sidB
      if l:e.payload.type ==# 'text.delta'
        let s:state.textB ..= l:e.payload.text
      elseif l:e.payload.type =~# '^run\.\(completed\|failed\|interrupted\)$'
        let s:state.terminalB = l:e.payload.type
      endif
    endif
  elseif has_key(a:msg, 'id') && !has_key(a:msg, 'method')
    let s:replies[a:msg.id] = a:msg
  endif
endfunc

func s:OnClose(ch, msg) abort
  let s:state.closeCallback = a:msg
endfunc

func s:OnErr(ch, line) abort
endfunc

func s:Raw(method, params) abort
  let s:n += 1
  let l:msg = #{jsonrpc: '2.0', id: s:n, method: a:method}
  if a:params isnot v:null
    let l:msg.params = a:params
  endif
  let l:body = json_encode(l:msg)
  call ch_sendraw(s:ch, 'Content-Length: ' .. len(l:body) .. "\r\n\r\n" .. l:body)
  return s:n
endfunc

func s:Await(id) abort
  let l:waited = 0
  while !has_key(s:replies, a:id) && l:waited < 20000
    sleep 10m
    let l:waited += 10
  endwhile
  if !has_key(s:replies, a:id) || !has_key(s:replies[a:id], 'result')
    throw 'no result for ' .. a:id .. ': ' .. json_encode(get(s:replies, a:id, {}))
  endif
  return s:replies[a:id].result
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
  call s:Await(s:Raw('initialize', #{protocolVersion: 1, clientInfo: #{name: 'vim'},
        \ capabilities: #{interactions: #{approval: v:true}}}))
  call ch_sendraw(s:ch, "Content-Length: 40\r\n\r\n" .. '{"jsonrpc":"2.0","method":"initialized"}')
  let s:sidA = s:Await(s:Raw('session/create', #{provider: 'scripted', options: #{script:
        \ #{steps: [#{type: 'waitForInterrupt', ignoreInterrupt: v:true}]}}})).session.sessionId
  call s:Await(s:Raw('run/start', #{sessionId: s:sidA, input: #{text: 'hang'}}))
  let s:sidB = s:Await(s:Raw('session/create', #{provider: 'scripted', options: #{script:
        \ #{steps: [#{type: 'approval', title: 'Run `make`',
        \   onAllow: [#{type: 'text', text: 'allowed'}],
        \   onDeny: [#{type: 'text', text: 'denied'}]},
        \  #{type: 'approval', title: 'Run `make install`',
        \   onAllow: [#{type: 'text', text: ' twice'}],
        \   onDeny: [#{type: 'text', text: ' denied'}]}]}}})).session.sessionId
  " Vim's own first request (id 1): pending for the interrupt grace.
  let s:close = ch_sendexpr(s:ch, #{method: 'session/close', params: #{sessionId: s:sidA}},
        \ #{callback: function('s:OnClose')})
  let s:state.closeId = s:close.id
  call s:Await(s:Raw('run/start', #{sessionId: s:sidB, input: #{text: 'build'}}))
  let s:waited = 0
  while (s:state.terminalB ==# '' || empty(s:state.closeCallback)) && s:waited < 20000
    sleep 10m
    let s:waited += 10
  endwhile
  call s:Await(s:Raw('shutdown', v:null))
  call s:Finish(s:state.terminalB ==# 'run.completed')
catch
  call add(s:state.errors, v:exception .. ' at ' .. v:throwpoint)
  call s:Finish(0)
endtry
