--- agent-bridge for Neovim: sessions with AI coding agents through `agent-bridge serve`.
--- See :help agent-bridge.
local client_mod = require('agent_bridge.client')
local chat = require('agent_bridge.chat')
local prompts = require('agent_bridge.prompts')
local input = require('agent_bridge.input')
local native = require('agent_bridge.native')

local M = {}

M.config = {
  cmd = nil, -- the bridge command (argv list or string); default: agent-bridge on PATH
  subcommand = 'serve', -- 'connect' to reach the bridge's daemon (docs/daemon.md)
  state_dir = nil, -- --state-dir for the bridge; default: the bridge's own default
  args = {}, -- further `serve` arguments
  env = nil,
  log_events = true, -- keep event notifications in the traffic log
  send_key = '<C-s>', -- sends the prompt area in insert mode (<CR> sends in normal mode)
  input_height = 4, -- lines of the prompt area below the chat
}

--- Everything the plugin knows: the bridge client, the sessions by id, the current one.
M.state = { client = nil, sessions = {}, current = nil, providers = nil, limits = {} }

local function notify(msg, level)
  vim.notify('agent-bridge: ' .. msg, level or vim.log.levels.INFO)
end

--- The text to show for a protocol error: its `data.code` (the classified code, which
--- generic clients call "unknown"), message and next step.
---@param err table
---@return string
function M.format_error(err)
  if type(err) ~= 'table' then
    return tostring(err)
  end
  local data = type(err.data) == 'table' and err.data or {}
  local text = (data.code or tostring(err.code)) .. ': ' .. (data.message or err.message or '')
  local details = type(data.details) == 'table' and data.details or {}
  if details.nextStep then
    text = text .. ' — next step: ' .. details.nextStep
  elseif details.reason then
    text = text .. ' (' .. details.reason .. ')'
  end
  if details.cause then -- a rate limit or a spent quota: when it lifts
    local when = {}
    if details.resetsAt then
      table.insert(when, 'resets ' .. M.reset_time(details.resetsAt))
    end
    if details.retryAfterSeconds then
      table.insert(when, ('retry after %d s'):format(details.retryAfterSeconds))
    end
    text = text .. ' (' .. table.concat({ details.cause, unpack(when) }, ', ') .. ')'
  end
  return text
end

--- A reset time (ISO 8601 UTC, as the bridge sends it) shortened for a bar: "12-02
--- 05:00 UTC"; the text as given when it is not in that shape.
---@param iso string
---@return string
function M.reset_time(iso)
  local mo, d, h, mi = tostring(iso):match('^%d+%-(%d+)%-(%d+)T(%d+):(%d+)')
  if not mo then
    return tostring(iso)
  end
  return ('%s-%s %s:%s UTC'):format(mo, d, h, mi)
end

local function report(what, err)
  notify(what .. ' failed: ' .. M.format_error(err), vim.log.levels.ERROR)
end

---@param opts table|nil
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
end

-- ------------------------------------------------------------------ sessions

--- The state of session `id` (created on first sight).
---@param id string
---@param info table|nil a SessionInfo
---@return table
function M.session(id, info)
  local s = M.state.sessions[id]
  if not s then
    s = { id = id, last_seq = 0, pending = {}, edits = {}, tools = {}, blocks = {}, context = {}, commands = {} }
    M.state.sessions[id] = s
  end
  if info then
    s.provider = info.providerId or s.provider
    s.title = info.title or s.title
    s.state = info.state or s.state
    s.active_run = info.activeRunId
  end
  return s
end

--- The session of the current chat buffer, else the last one used.
---@return table|nil
function M.current()
  local id = vim.b.agent_bridge_session or vim.b.agent_bridge_input or M.state.current
  return id and M.state.sessions[id] or nil
end

--- How many approvals (and questions) wait for an answer in session `s`.
---@param s table
---@return integer
function M.pending_count(s)
  local n = 0
  for _ in pairs(s.pending) do
    n = n + 1
  end
  return n
end

--- The chat window's bar: provider, the model and mode chosen, session, run state and
--- the pending count.
---@return string
function M.winbar()
  local b = vim.b[vim.api.nvim_win_get_buf(vim.g.statusline_winid or 0)]
  local id = b.agent_bridge_session or b.agent_bridge_input
  local s = id and M.state.sessions[id]
  if not s then
    return ''
  end
  local parts = { 'agent-bridge', s.provider or '?' }
  vim.list_extend(parts, s.chosen or {})
  table.insert(parts, s.title or s.id)
  table.insert(parts, s.active_run and 'running' or ((s.state == 'closed') and 'closed' or 'idle'))
  local n = M.pending_count(s)
  if n > 0 then
    table.insert(parts, ('%d pending %s'):format(n, n == 1 and 'approval' or 'approvals'))
  end
  if s.usage and s.usage.context then
    table.insert(parts, ('%d tokens'):format(s.usage.context.usedTokens or 0))
  end
  local limits = M.limits_text(s)
  if limits then
    table.insert(parts, limits)
  end
  return ' ' .. table.concat(parts, ' · '):gsub('%%', '%%%%')
end

--- The provider's limits as the bar shows them (from `limits.updated`, shared by the
--- provider's sessions, and `provider/limits`): each meter with its percent used, its
--- status when not ok and its reset time; nil before any report.
---@param s table
---@return string|nil
function M.limits_text(s)
  local meters = M.state.limits[s.provider or '']
  if not meters or #meters == 0 then
    return nil
  end
  local out = {}
  for _, m in ipairs(meters) do
    local t = m.meter
    if m.percent then
      t = t .. (' %d%%'):format(math.floor(m.percent + 0.5))
    elseif m.used and m.limit then
      t = t .. (' %s/%s'):format(m.used, m.limit)
    end
    if m.status and m.status ~= 'ok' then
      t = t .. ' ' .. m.status
    end
    if m.resetsAt then
      t = t .. ', resets ' .. M.reset_time(m.resetsAt)
    end
    table.insert(out, t)
  end
  return 'limits: ' .. table.concat(out, '; ')
end

-- ------------------------------------------------------------------ events

local function tool_header(s, p)
  local t = s.tools[p.toolCallId] or {}
  s.tools[p.toolCallId] = t
  t.name = p.name or t.name
  t.title = p.title or t.title
  if p.input ~= nil and t.input == nil then
    t.input = p.input
  end
  t.status = p.status
  if p.exitCode ~= nil then
    t.exit = p.exitCode
  end
  local what = t.title
  if not what and type(t.input) == 'table' then
    what = t.input.command or t.input.file_path or t.input.path
  end
  local status = t.status == 'started' and 'running' or (t.status == 'output' and 'running' or t.status)
  if t.exit ~= nil then
    status = status .. ', exit ' .. tostring(t.exit)
  end
  if type(p.subagent) == 'table' then
    t.subagent = vim.tbl_extend('force', t.subagent or {}, p.subagent)
  end
  local sub = t.subagent
  if sub then -- the call runs a subagent: its tool calls fold under this header
    status = sub.status or status
    local u = sub.usage
    if type(u) == 'table' then
      local figures = {}
      if u.toolUses then
        table.insert(figures, u.toolUses .. ' tool uses')
      end
      if u.totalTokens then
        table.insert(figures, u.totalTokens .. ' tokens')
      end
      if u.durationMs then
        table.insert(figures, ('%.1f s'):format(u.durationMs / 1000))
      end
      if #figures > 0 then
        status = status .. ', ' .. table.concat(figures, ', ')
      end
    end
    return ('agent %s%s [%s]'):format(sub.agentType or t.name or '?',
      sub.description and (': ' .. sub.description) or '', status)
  end
  return ('tool %s%s [%s]'):format(t.name or '?', what and (': ' .. tostring(what)) or '', status)
end

local function split_lines(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

local render = {}

--- One line for a block of a run's input that is not its text: what was attached.
---@param b table an input block as run.started records it
---@return string|nil
function M.describe_block(b)
  if b.type == 'command' then
    return '/' .. b.name .. ((b.arguments and b.arguments ~= '') and (' ' .. b.arguments) or '')
  elseif b.type == 'file' then
    local where = b.startLine and (':' .. b.startLine .. '-' .. (b.endLine or b.startLine)) or ''
    return '@ ' .. vim.fn.fnamemodify(b.path, ':~:.') .. where
  elseif b.type == 'resource' then
    local n = #vim.split(b.text or '', '\n', { plain = true })
    return ('@ %s (%d %s)'):format(b.uri or 'text', n, n == 1 and 'line' or 'lines')
  elseif b.type == 'image' then
    local what = b.path and vim.fn.fnamemodify(b.path, ':~:.') or (b.mimeType or '?')
    return '@ image ' .. what .. (b.size and (' (%d bytes)'):format(b.size) or '')
  end
  return nil
end

render['run.started'] = function(s, e, p)
  s.active_run = e.runId
  chat.buffer(s)
  -- where the run starts in the chat (a mark: lines above it may still grow), so a key
  -- on any of its lines knows the run (fork from it)
  local row = vim.api.nvim_buf_line_count(s.buf)
  s.runs = s.runs or {}
  table.insert(s.runs, { id = e.runId, mark = vim.api.nvim_buf_set_extmark(s.buf, chat.ns, row - 1, 0, {}) })
  local lines = { '', '## You', unpack(split_lines(p.input or '')) }
  for _, b in ipairs(p.content or {}) do
    table.insert(lines, M.describe_block(b))
  end
  chat.append(s, lines)
  chat.append(s, { '', '## Agent' })
end

--- Take `meters` as the latest figures of `provider`'s limits (the others kept).
---@param provider string|nil
---@param meters table[]|nil
function M.merge_limits(provider, meters)
  local known = M.state.limits[provider or ''] or {}
  M.state.limits[provider or ''] = known
  for _, m in ipairs(meters or {}) do
    local found = false
    for i, old in ipairs(known) do
      if old.pool == m.pool and old.meter == m.meter then
        known[i], found = m, true
      end
    end
    if not found then
      table.insert(known, m)
    end
  end
end

render['limits.updated'] = function(s, _, p)
  -- an update names only the meters reported that time: the others keep their figures
  M.merge_limits(s.provider, p.meters)
end

render['commands.updated'] = function(s, _, p)
  s.commands = p.commands or {}
end

render['text.delta'] = function(s, e, p)
  local new = s.tail ~= 'text'
  chat.stream(s, p.text or '', 'text')
  -- where each agent message is in the chat (first and last line) and its last event: a
  -- fork from it (`gf` on it) is made there, where the provider forks at messages
  local last = vim.api.nvim_buf_line_count(s.buf) - 1
  s.messages = s.messages or {}
  local m = s.messages[#s.messages]
  if new or not m or m.run ~= e.runId then
    -- (on the line before its first, which is not rewritten as the stream grows)
    local before = last - #vim.split(p.text or '', '\n', { plain = true })
    m = { run = e.runId, before = vim.api.nvim_buf_set_extmark(s.buf, chat.ns, before, 0, {}) }
    table.insert(s.messages, m)
  end
  m.last_row = vim.api.nvim_buf_set_extmark(s.buf, chat.ns, last, 0, { id = m.last_row })
  m.sequence = e.sequence
end

render['thinking.delta'] = function(s, _, p)
  chat.stream(s, p.text or '', 'thinking')
end

render['tool.activity'] = function(s, _, p)
  local key = 'tool:' .. p.toolCallId
  if not s.blocks[key] then
    -- a call made inside a subagent is nested in the block of the call that runs it
    chat.block(s, key, tool_header(s, p), p.parentToolCallId and ('tool:' .. p.parentToolCallId))
    if p.input ~= nil then
      local ok, text = pcall(vim.json.encode, p.input)
      chat.block_body(s, key, { 'input: ' .. (ok and text or '?') })
    end
  else
    chat.block_header(s, key, tool_header(s, p))
  end
  if p.output then
    chat.block_body(s, key, split_lines(p.output))
  end
  for _, item in ipairs(p.content or {}) do
    if item.type == 'edit' then
      table.insert(s.edits, { path = item.path, oldText = item.oldText, newText = item.newText or '' })
      chat.block_body(s, key, {
        ('edit %s (%s) — :AgentBridge diff %d'):format(item.path, item.oldText and 'changed' or 'new file', #s.edits),
      })
    elseif item.type == 'text' and item.text then
      chat.block_body(s, key, split_lines(item.text))
    end
  end
end

render['plan.updated'] = function(s, _, p)
  local lines = { 'Plan:' }
  local marks = { pending = '[ ]', inProgress = '[~]', completed = '[x]' }
  for _, step in ipairs(p.steps or {}) do
    table.insert(lines, ('  %s %s'):format(marks[step.status] or '[ ]', step.text))
  end
  chat.append(s, lines)
end

render['usage'] = function(s, _, p)
  s.usage = p
end

render['diagnostic'] = function(s, _, p)
  chat.append(s, { ('! %s %s: %s'):format(p.level or 'info', p.code or '', p.message or '') })
end

--- The file change an approval proposes, when its input says (Claude Code's Edit and
--- Write tools' shapes, or a ToolEdit's): { path, old, new }, else nil.
---@param request table
---@return table|nil
function M.proposed_edit(request)
  local input = type(request) == 'table' and request.input
  if type(input) ~= 'table' then
    return nil
  end
  local path = input.file_path or input.path
  if type(path) ~= 'string' then
    return nil
  end
  if type(input.old_string) == 'string' and type(input.new_string) == 'string' then
    return { path = path, old = input.old_string, new = input.new_string }
  elseif type(input.oldText) == 'string' and type(input.newText) == 'string' then
    return { path = path, old = input.oldText, new = input.newText }
  elseif type(input.content) == 'string' then
    local ok, lines = pcall(vim.fn.readfile, path)
    local old = (ok and #lines > 0) and (table.concat(lines, '\n') .. '\n') or ''
    return { path = path, old = old, new = input.content }
  end
  return nil
end

render['interaction.requested'] = function(s, _, p)
  s.pending[p.interactionId] = p.request
  input.refresh_bar(s)
  local kind = p.request and p.request.kind or 'interaction'
  local parent = p.request and p.request.parentToolCallId and s.tools[p.request.parentToolCallId]
  local within = ''
  if parent then -- asked inside a subagent: say which
    within = (' (in agent %s)'):format((parent.subagent or {}).agentType or parent.name or '?')
  end
  chat.append(s, { ('? %s: %s%s'):format(kind, prompts.describe(p.request or {}), within) })
  local edit = kind == 'approval' and M.proposed_edit(p.request)
  if edit then
    -- the proposed change inline, as a block: ga accepts, gr rejects
    local key = 'proposal:' .. p.interactionId
    chat.block(s, key, ('proposed edit %s (ga accept, gr reject)'):format(edit.path))
    local diff = vim.diff(edit.old, edit.new, { result_type = 'unified', ctxlen = 2 }) or ''
    chat.block_body(s, key, vim.split(vim.trim(diff), '\n', { plain = true }))
  end
end

render['interaction.settled'] = function(s, _, p)
  s.pending[p.interactionId] = nil
  input.refresh_bar(s)
  M._release(p.interactionId)
  local text = '→ ' .. (p.status or 'settled')
  local summary = prompts.summary(p.answer)
  if summary ~= '' then
    text = text .. ': ' .. summary
  end
  if p.auto then
    text = text .. ' (by the bridge)'
  end
  chat.append(s, { text })
end

--- The run's last event: where a fork from it is made.
local function run_ended(s, e)
  chat.refold(s) -- (after lines appended below nested blocks: see chat.refold)
  s.active_run = nil
  s.ended = s.ended or {}
  s.ended[e.runId or ''] = e.sequence or true
end

render['run.completed'] = function(s, e, p)
  run_ended(s, e)
  chat.append(s, { '✓ done' .. (p.stopReason and (' (' .. p.stopReason .. ')') or '') })
end

render['run.failed'] = function(s, e, p)
  run_ended(s, e)
  chat.append(s, { '✗ failed: ' .. M.format_error({ data = p.error }) })
end

render['run.interrupted'] = function(s, e, p)
  run_ended(s, e)
  chat.append(s, { '✗ interrupted (' .. (p.reason or 'user') .. (p.forced and ', forced' or '') .. ')' })
end

render['session.closed'] = function(s, _, p)
  s.state = 'closed'
  s.active_run = nil
  s.pending = {}
  chat.append(s, { '— session closed (' .. (p.reason or 'closed') .. ')' })
end

render['settings.updated'] = function(s, _, p)
  local words = {}
  if p.model then
    table.insert(words, 'model ' .. p.model)
  end
  if p.mode then
    table.insert(words, 'mode ' .. p.mode)
  end
  if #words > 0 then
    s.chosen = words
    chat.append(s, { '— ' .. table.concat(words, ' · ') })
  end
end

render['session.imported'] = function(s, _, p)
  chat.append(s, { ("— imported from %s's own session (%s %s)"):format(
    p.provider or '?', tostring(p.records or 0), p.records == 1 and 'record' or 'records') })
end

render['session.resumed'] = function(s, _, _)
  s.state = 'active'
  chat.append(s, { '— session resumed' })
end

--- Apply one event envelope to its session (each sequence once, in order).
---@param e table
function M.on_event(e)
  local s = M.session(e.sessionId)
  if e.sequence and e.sequence <= s.last_seq then
    return -- a replayed event this buffer already shows
  end
  s.last_seq = e.sequence or s.last_seq
  local p = e.payload or {}
  local f = render[p.type]
  if f then
    f(s, e, p)
  end
  vim.cmd('redrawstatus!')
end

-- ------------------------------------------------------------------ interactions

--- Prompts run one at a time: the queue of interactions waiting for the prompt.
local queue, prompting = {}, false
--- Requests whose prompt was dismissed, by interaction id: left unanswered until the
--- interaction settles another way.
local held = {}

--- The interaction settled: end its dismissed request (the bridge ignores that reply).
local function release(iid)
  local item = held[iid]
  if item then
    held[iid] = nil
    item.released = true
    item.finish(nil)
  end
end

--- True while the user is typing: not in normal mode, or in a chat's prompt area.
---@return boolean
function M.typing()
  return vim.api.nvim_get_mode().mode:sub(1, 1) ~= 'n' or vim.b.agent_bridge_input ~= nil
end

local function next_prompt()
  if prompting or #queue == 0 then
    return
  end
  local item = table.remove(queue, 1)
  local s = M.state.sessions[item.params.sessionId]
  if s and not s.pending[item.params.interactionId] then -- settled meanwhile
    item.released = true
    item.finish(nil)
    return next_prompt()
  end
  if M.typing() then
    -- Not asked while the user types (insert mode, the command line, the prompt area):
    -- keys typed for something else must not answer it. It stays pending; `a` (or
    -- ga / gr) in the chat, or :AgentBridge approvals, answers it.
    item.finish(nil)
    notify(('%s waiting: a, ga or gr in the chat (:AgentBridge approvals)')
      :format(prompts.describe(item.params.request or {})))
    return next_prompt()
  end
  prompting = true
  prompts.ask(item.params.request, function(answer)
    prompting = false
    item.finish(answer)
    vim.schedule(next_prompt)
  end)
end

--- The bridge's `interaction/request` (runs in a coroutine: waits for the user's answer).
local function on_request(method, params)
  if method ~= 'interaction/request' then
    return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
  end
  local co = coroutine.running()
  local item = { params = params }
  local answered = false
  item.finish = function(answer)
    if answered then
      return
    end
    if answer == nil and not item.released then
      -- Dismissed: the request stays unanswered, so the interaction stays pending
      -- (answer it later with :AgentBridge approvals); released once it settles.
      held[params.interactionId] = item
      return
    end
    answered = true
    coroutine.resume(co, answer)
  end
  local s = M.session(params.sessionId)
  s.pending[params.interactionId] = s.pending[params.interactionId] or params.request
  table.insert(queue, item)
  vim.schedule(next_prompt)
  local answer = coroutine.yield()
  if answer == nil then
    return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestCancelled, 'dismissed')
  end
  return answer
end

--- The bridge withdrew a request (the interaction was settled another way).
local function on_cancel(_)
  -- The request ids are the rpc client's; the interaction's own settlement event tells
  -- which one: drop queued prompts whose interaction is no longer pending.
  vim.schedule(function()
    for i = #queue, 1, -1 do
      local item = queue[i]
      local s = M.state.sessions[item.params.sessionId]
      if s and not s.pending[item.params.interactionId] then
        table.remove(queue, i)
        item.released = true
        item.finish(nil)
      end
    end
  end)
end

M._release = release

-- ------------------------------------------------------------------ the bridge

--- The running bridge client, started (and initialized) on first use; `fn(client)` runs
--- once it is ready. Shows the reason and next step when the bridge cannot start.
---@param fn fun(client: AgentBridgeClient)
function M.with_client(fn)
  local c = M.state.client
  if c and not c.exited then
    if c.ready then
      return fn(c)
    end
    table.insert(c.waiting, fn)
    return
  end
  local started, why = client_mod.start(M.config, {
    notification = function(method, params)
      if method == 'event' then
        M.on_event(params)
      elseif method == 'journal/status' and params and params.state ~= 'ok' then
        notify('journal ' .. tostring(params.state) .. ' (' .. tostring(params.reason) .. ')', vim.log.levels.WARN)
      end
    end,
    request = on_request,
    cancel = on_cancel,
    exit = function(code, _)
      local was = M.state.client
      if was and was.stopping then
        return
      end
      if was and not was.ready then
        notify(('the bridge exited (code %s) before it answered initialize: run `%s --help` to check it'):format(
          tostring(code), was.argv[1]), vim.log.levels.ERROR)
      elseif code ~= 0 then
        notify(('the bridge exited (code %s); :AgentBridge sessions to reattach'):format(tostring(code)),
          vim.log.levels.WARN)
      end
    end,
  })
  if not started then
    notify(why, vim.log.levels.ERROR)
    return
  end
  c = started
  c.waiting = { fn }
  c.on_log = M._on_log
  M.state.client = c
  c:request('initialize', {
    protocolVersion = 1,
    clientInfo = { name = 'agent-bridge.nvim', version = '0.1.0' },
    capabilities = { interactions = { approval = true, question = true, questionSet = true } },
  }, function(err, result)
    if err then
      report('initialize', err)
      return
    end
    c.init_result = result
    c:notify('initialized', vim.empty_dict())
    c.ready = true
    local waiting = c.waiting
    c.waiting = {}
    for _, f in ipairs(waiting) do
      f(c)
    end
  end)
end

--- Send a request through the running bridge; `on_result(result)` on success, the error
--- shown otherwise (`on_error(err)` also called when given).
function M.call(method, params, on_result, on_error)
  M.with_client(function(c)
    c:request(method, params, function(err, result)
      if err then
        report(method, err)
        if on_error then
          on_error(err)
        end
        return
      end
      if on_result then
        on_result(result)
      end
    end)
  end)
end

-- ------------------------------------------------------------------ commands

--- Parse `key=value` arguments (a value that is JSON is decoded).
local function parse_options(args)
  local out = {}
  for _, arg in ipairs(args) do
    local key, value = arg:match('^([%w_]+)=(.*)$')
    if key then
      local ok, decoded = pcall(vim.json.decode, value)
      out[key] = (ok and type(decoded) ~= 'string' and decoded ~= nil) and decoded or value
    end
  end
  return out
end

local function describe_provider(p)
  local a = p.availability or {}
  local label = ('%s (%s)'):format(p.displayName or p.id, p.id)
  if a.status and a.status ~= 'available' then
    label = label .. ' — ' .. a.status .. (a.reason and (': ' .. a.reason) or '')
  end
  return label
end

local function option_named(p, names)
  for _, o in ipairs(p.options or {}) do
    if o.scope == 'session' then
      for _, n in ipairs(names) do
        if o.name == n then
          return o
        end
      end
    end
  end
end

--- Ask for a value of `option` (an enum: vim.ui.select of its values; else vim.ui.input);
--- `done(value|nil)`.
local function pick_option(option, title, done)
  if not option then
    return done(nil)
  end
  if option.type == 'enum' and option.values then
    local items = { '(default' .. (option.default and (': ' .. tostring(option.default)) or '') .. ')' }
    vim.list_extend(items, option.values)
    vim.ui.select(items, { prompt = title, kind = 'agent_bridge.' .. option.name }, function(choice, idx)
      done((idx and idx > 1) and choice or nil)
    end)
  else
    vim.ui.input({ prompt = title .. ' (empty: default) ' }, function(text)
      done((text and text ~= '') and text or nil)
    end)
  end
end

--- The model and mode chosen for a session on provider `p` (from its creation `options`),
--- as the words the chat's bar shows: e.g. { 'model sonnet', 'permissionMode plan' }.
---@return string[]
function M.chosen(p, options)
  local out = {}
  if options.model then
    table.insert(out, 'model ' .. tostring(options.model))
  end
  local mode = option_named(p, { 'mode', 'permissionMode', 'approvalPolicy' })
  if mode and options[mode.name] then
    table.insert(out, mode.name .. ' ' .. tostring(options[mode.name]))
  end
  return out
end

--- Show the chat of `s` with its prompt area below; `focus_input` puts the cursor there.
---@return integer win the chat window
function M.show(s, focus_input)
  local win = chat.show(s)
  local keys = {
    send_key = M.config.send_key,
    send = function(text)
      M.state.current = s.id
      M.prompt(text)
    end,
    cancel = function()
      M.state.current = s.id
      M.cancel()
    end,
  }
  local iwin = input.show(s, win, keys, M.config.input_height)
  if focus_input then
    vim.api.nvim_set_current_win(iwin)
  end
  return win
end

--- Buffer-local keys of a chat buffer: approve, diff, interrupt, next/previous block, input.
---@param s table
function M.chat_keys(s)
  local buf = s.buf
  if not buf or vim.b[buf].agent_bridge_keys then
    return
  end
  vim.b[buf].agent_bridge_keys = true
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = 'agent-bridge: ' .. desc })
  end
  local function jump(flags)
    return function()
      vim.fn.search('^' .. chat.HEADER, flags)
    end
  end
  map('a', M.approvals, 'answer a pending approval or question')
  map('ga', function() M.decide('allow') end, 'accept the pending approval (once)')
  map('gr', function() M.decide('deny') end, 'reject the pending approval')
  map('d', function() M.diff() end, 'open the last edit in a diff view')
  map('gf', function() M.fork() end, 'fork the session from the run or message under the cursor')
  map('gm', M.settings, 'switch the model or mode')
  map('<C-c>', M.cancel, 'interrupt the run')
  map(']]', jump('W'), 'next thinking or tool call')
  map('[[', jump('bW'), 'previous thinking or tool call')
  map('i', function()
    local iwin = s.input_buf and vim.fn.bufwinid(s.input_buf) or -1
    if iwin == -1 then
      M.show(s, true)
    else
      vim.api.nvim_set_current_win(iwin)
    end
    -- insert mode, before any key typed after this one (typeahead)
    vim.api.nvim_feedkeys('A', 'ni', false)
  end, 'write a prompt')
end

--- Create a session on `p` with `options`, then show its chat buffer.
local function create_session(p, options, title)
  local a = p.availability or {}
  -- (an executable or command given here was not part of the availability probe)
  if a.status == 'unavailable' and not options.executable and not options.command then
    notify(('%s is not available: %s%s'):format(p.id, a.reason or 'not installed',
      a.nextStep and (' — next step: ' .. a.nextStep) or ''), vim.log.levels.ERROR)
    return
  end
  -- the editor's working directory is the workspace: the files a prompt refers to
  local params = { provider = p.id, title = title, workspace = vim.fn.getcwd() }
  if next(options) then
    params.options = options
  end
  M.call('session/create', params, function(result)
    local s = M.session(result.session.sessionId, result.session)
    s.chosen = M.chosen(p, options)
    M.state.current = s.id
    M.show(s, true)
    M.chat_keys(s)
    M.load_commands(s)
  end)
end

--- Read the commands `s`'s provider offers (session/commands) for the prompt area's
--- `/` completion; `commands.updated` events keep them current.
---@param s table
function M.load_commands(s)
  M.call('session/commands', { sessionId = s.id }, function(result)
    s.commands = result.commands or {}
  end, function() end)
  -- and the latest figures of the provider's limits this bridge has seen, for the bar
  M.call('provider/limits', { provider = s.provider }, function(result)
    M.merge_limits(s.provider, result.meters)
    vim.cmd('redrawstatus!')
  end, function() end)
end

--- The prompt area's 'omnifunc': completes `/name` at the start of the prompt from the
--- session's commands (each with its description and argument hint).
---@param findstart integer
---@param base string
---@return integer|table
function M.complete_command(findstart, base)
  local s = M.current()
  if findstart == 1 then
    local before = vim.api.nvim_get_current_line():sub(1, vim.fn.col('.') - 1)
    if vim.fn.line('.') == 1 and before:match('^/%S*$') then
      return 0
    end
    return -3 -- not a command: leave completion quietly
  end
  local items = {}
  for _, c in ipairs(s and s.commands or {}) do
    local word = '/' .. c.name
    if vim.startswith(word, base) then
      table.insert(items, {
        word = word .. ' ',
        abbr = word,
        menu = c.hint,
        info = (c.description and c.description ~= '') and c.description or nil,
      })
    end
  end
  return items
end

--- The run input for prompt `text` with the context blocks `context` attached: a text
--- starting `/name` where `name` is one of the session's commands is that command (the
--- rest its arguments); `{text}` alone when nothing is attached, else content blocks.
---@param s table
---@param text string
---@param context table[]
---@return table
function M.run_input(s, text, context)
  local name, rest = text:match('^/(%S+)%s*(.-)%s*$')
  local command
  for _, c in ipairs(name and s.commands or {}) do
    if c.name == name then
      command = { type = 'command', name = name }
      if rest ~= '' then
        command.arguments = rest
      end
    end
  end
  if not command and #context == 0 then
    return { text = text }
  end
  local content = { command or { type = 'text', text = text } }
  vim.list_extend(content, context)
  return { content = content }
end

--- The image files sent as images, by extension: their MIME type.
local IMAGE_TYPES = { png = 'image/png', jpg = 'image/jpeg', jpeg = 'image/jpeg',
  gif = 'image/gif', webp = 'image/webp' }

--- The `image` block for image file `path`, or nil when it is not one: by its path inside
--- `workspace` (the bridge reads it), else its bytes (base64) with its MIME type.
---@param path string
---@param workspace string
---@return table|nil
function M.image_block(path, workspace)
  local mime = IMAGE_TYPES[(vim.fn.fnamemodify(path, ':e')):lower()]
  if not mime then
    return nil
  end
  local full = vim.uv.fs_realpath(path) or vim.fn.fnamemodify(path, ':p')
  local root = vim.uv.fs_realpath(workspace) or workspace
  if vim.startswith(full, root:gsub('/$', '') .. '/') then
    return { type = 'image', path = full, mimeType = mime }
  end
  local f = io.open(full, 'rb')
  if not f then
    return nil
  end
  local data = f:read('a')
  f:close()
  return { type = 'image', mimeType = mime, data = vim.base64.encode(data) }
end

--- The context block for lines `first`..`last` of buffer `buf` (`ranged`: a selection,
--- else the whole file): a `file` block naming the file and lines when the buffer is a
--- file saved on disk (the agent reads it), an `image` block for an image file (see
--- `M.image_block`), else a `resource` block with the text.
---@return table
function M.context_block(buf, first, last, ranged)
  local path = vim.api.nvim_buf_get_name(buf)
  local on_disk = path ~= '' and vim.bo[buf].buftype == '' and not vim.bo[buf].modified
    and vim.fn.filereadable(path) == 1
  local image = on_disk and M.image_block(path, vim.fn.getcwd())
  if image then
    return image
  end
  if on_disk then
    local b = { type = 'file', path = vim.fn.fnamemodify(path, ':p') }
    if ranged then
      b.startLine, b.endLine = first, last
    end
    return b
  end
  local lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  return {
    type = 'resource',
    text = table.concat(lines, '\n'),
    uri = path ~= '' and vim.uri_from_fname(vim.fn.fnamemodify(path, ':p')) or ('untitled:' .. buf),
  }
end

--- :[range]AgentBridge send [text]: the selection (with a range, e.g. from visual mode)
--- or the current file as context for the current session. With text: a run starts at
--- once with it; without: the context is attached to the next prompt sent from the
--- prompt area (its bar lists what is attached), which gets the cursor.
---@param args string[]
---@param opts table the user command's opts (range, line1, line2)
function M.send(args, opts)
  local s = M.current()
  if not s then
    return notify('no session: :AgentBridge new or :AgentBridge sessions', vim.log.levels.WARN)
  end
  local buf = vim.api.nvim_get_current_buf()
  if vim.b[buf].agent_bridge_session or vim.b[buf].agent_bridge_input then
    return notify('send from a file buffer (a selection or the whole file)', vim.log.levels.WARN)
  end
  local ranged = (opts and opts.range or 0) > 0
  local first = ranged and opts.line1 or 1
  local last = ranged and opts.line2 or vim.api.nvim_buf_line_count(buf)
  local block = M.context_block(buf, first, last, ranged)
  local text = table.concat(args or {}, ' ')
  if text ~= '' then
    return M.start_run(s, M.run_input(s, text, { block }))
  end
  table.insert(s.context, block)
  M.show(s, true)
  input.refresh_bar(s)
end

--- :AgentBridge new [provider] [key=value ...]: pick the provider (and its model and mode
--- options) from `providers/list`, create the session, open its chat buffer.
function M.new_session(args)
  args = args or {}
  local provider_id = args[1] and not args[1]:find('=') and args[1] or nil
  local options = parse_options(args)
  local title = options.title
  options.title = nil
  M.call('providers/list', { probe = true }, function(result)
    M.state.providers = result.providers
    local function with_provider(p)
      if not p then
        return
      end
      local model = option_named(p, { 'model' })
      local mode = option_named(p, { 'mode', 'permissionMode', 'approvalPolicy' })
      if provider_id then -- options given on the command line: no pickers
        return create_session(p, options, title)
      end
      pick_option(model, 'Model for ' .. p.id, function(m)
        options.model = m
        pick_option(mode, (mode and mode.name or 'mode') .. ' for ' .. p.id, function(md)
          if mode then
            options[mode.name] = md
          end
          create_session(p, options, title)
        end)
      end)
    end
    if provider_id then
      for _, p in ipairs(result.providers) do
        if p.id == provider_id then
          return with_provider(p)
        end
      end
      return notify(('no provider %q (:AgentBridge new lists them)'):format(provider_id), vim.log.levels.ERROR)
    end
    vim.ui.select(result.providers, {
      prompt = 'agent-bridge provider',
      kind = 'agent_bridge.provider',
      format_item = describe_provider,
    }, with_provider)
  end)
end

--- Start a run of `s` with `run_input`; `on_refused()` when the bridge refuses it.
function M.start_run(s, run_input, on_refused)
  M.call('run/start', { sessionId = s.id, input = run_input }, function(result)
    -- The reply may come after the run's events, even its end.
    if not (s.ended and s.ended[result.runId]) then
      s.active_run = result.runId
    end
  end, on_refused)
end

--- :AgentBridge prompt [text]: start a run in the current session.
function M.prompt(text)
  local s = M.current()
  if not s then
    return notify('no session: :AgentBridge new or :AgentBridge sessions', vim.log.levels.WARN)
  end
  local function send(t)
    if not t or t == '' then
      return
    end
    local context = s.context
    s.context = {}
    input.refresh_bar(s)
    M.start_run(s, M.run_input(s, t, context), function()
      -- refused (the error is shown): the context stays attached for another try
      s.context = vim.list_extend(context, s.context)
      input.refresh_bar(s)
    end)
  end
  if text and text ~= '' then
    send(text)
  else
    vim.ui.input({ prompt = 'agent-bridge prompt: ' }, send)
  end
end

--- :AgentBridge cancel: interrupt the current session's run.
function M.cancel()
  local s = M.current()
  if not s or not s.active_run then
    return notify('no run to cancel', vim.log.levels.WARN)
  end
  M.call('run/interrupt', { runId = s.active_run, reason = 'user' })
end

--- Open session `info` (a SessionInfo) here: reattach when this bridge has it open
--- (its events after the last one shown are replayed, its pending approvals asked
--- again), resume it from the journal otherwise.
function M.open(info)
  local s = M.session(info.sessionId, info)
  M.state.current = s.id
  M.show(s, false)
  M.chat_keys(s)
  local method = info.state == 'active' and 'session/attach' or 'session/resume'
  M.call(method, { sessionId = s.id, after = s.last_seq }, function(result)
    M.session(s.id, result.session)
    M.load_commands(s)
  end, function(err)
    if method == 'session/attach' then
      return
    end
    local code = type(err.data) == 'table' and err.data.code
    if code == 'unsupported' or code == 'recovery_invalid' then -- read-only history
      M.call('session/attach', { sessionId = s.id, after = s.last_seq })
    end
  end)
end

--- :AgentBridge sessions: the sessions of the journal, newest first; pick one to open.
function M.sessions()
  M.call('session/list', {}, function(result)
    local list = result.sessions or {}
    if #list == 0 then
      return notify('no sessions yet: :AgentBridge new')
    end
    vim.ui.select(list, {
      prompt = 'agent-bridge sessions',
      kind = 'agent_bridge.session',
      format_item = function(info)
        local s = M.state.sessions[info.sessionId]
        -- after a restart this editor knows nothing pending: the bridge's count says
        local n = math.max(s and M.pending_count(s) or 0, info.pendingInteractions or 0)
        return ('%s · %s · %s%s · %s'):format(info.title or '(untitled)', info.providerId, info.state,
          n > 0 and (' · ' .. n .. ' pending') or '', info.sessionId)
      end,
    }, function(info)
      if info then
        M.open(info)
      end
    end)
  end)
end

--- :AgentBridge approvals: answer one of the current session's pending interactions
--- (through interaction/respond).
function M.approvals()
  local s = M.current()
  if not s or M.pending_count(s) == 0 then
    return notify('no pending approvals')
  end
  local ids = vim.tbl_keys(s.pending)
  table.sort(ids)
  local function answer(iid)
    prompts.ask(s.pending[iid], function(a)
      if a then
        M.call('interaction/respond', { interactionId = iid, answer = a })
      end
    end)
  end
  if #ids == 1 then
    return answer(ids[1])
  end
  vim.ui.select(ids, {
    prompt = 'agent-bridge pending',
    format_item = function(iid)
      return prompts.describe(s.pending[iid] or {})
    end,
  }, function(iid)
    if iid then
      answer(iid)
    end
  end)
end

--- Answer the current session's pending approval (the one asked first) with `decision`
--- ('allow': once, or 'deny') — the chat's ga / gr, e.g. on a proposed edit.
---@param decision string
function M.decide(decision)
  local s = M.current()
  local ids = {}
  for iid, request in pairs(s and s.pending or {}) do
    if request.kind == 'approval' then
      table.insert(ids, iid)
    end
  end
  table.sort(ids)
  if #ids == 0 then
    return notify('no pending approval')
  end
  local answer = { kind = 'approval', decision = decision }
  if decision == 'allow' then
    answer.mode = 'once'
  end
  M.call('interaction/respond', { interactionId = ids[1], answer = answer })
end

--- The run of `s` shown at chat line `lnum` (1-based): the last one starting at or
--- above it, or nil above the first.
---@return table|nil
function M.run_at(s, lnum)
  local found
  for _, r in ipairs(s.runs or {}) do
    -- (the mark is on the line before the run's first: 0-based `row`, 1-based row + 1;
    -- that line, the run before's outcome, is still the run before's)
    local row = vim.api.nvim_buf_get_extmark_by_id(s.buf, chat.ns, r.mark, {})[1]
    if row and row + 1 < lnum then
      found = r
    end
  end
  return found
end

--- The descriptor of provider `id`, when `providers/list` was read.
local function descriptor(id)
  for _, p in ipairs(M.state.providers or {}) do
    if p.id == id then
      return p
    end
  end
end

--- The agent message of run `run` on line `lnum` of the chat, when there is one.
local function message_at(s, run, lnum)
  for _, m in ipairs(s.messages or {}) do
    local before = vim.api.nvim_buf_get_extmark_by_id(s.buf, chat.ns, m.before, {})[1]
    local last = vim.api.nvim_buf_get_extmark_by_id(s.buf, chat.ns, m.last_row, {})[1]
    if m.run == run and before and last and before + 1 < lnum and lnum <= last + 1 then
      return m
    end
  end
end

--- :AgentBridge fork [N] (`gf` in the chat): a new session whose history is the current
--- session's up to the end of the run under the cursor (in the chat; elsewhere, the
--- whole history), made with `session/fork`, opened in its own chat. Where the
--- provider forks at messages (`capabilities.fork.granularity` `message`), `gf` on an
--- agent message forks at its last event, and N forks at event N; when the provider's
--- history is cut earlier (the reply's `providerSequence`), a message says so. Refused
--- here when the provider's descriptor has no `capabilities.fork`, and for a run still
--- going.
---@param at integer|nil
function M.fork(at)
  local s = M.current()
  if not s then
    return notify('no session to fork', vim.log.levels.WARN)
  end
  local params = { sessionId = s.id }
  local p = descriptor(s.provider)
  local by_message = p and ((p.capabilities or {}).fork or {}).granularity == 'message'
  if at then
    params.atEvent = at
  elseif vim.b.agent_bridge_session == s.id then
    local lnum = vim.fn.line('.')
    local run = M.run_at(s, lnum)
    if not run then
      return notify('put the cursor on a run to fork from', vim.log.levels.WARN)
    end
    local last = s.ended and s.ended[run.id]
    if type(last) ~= 'number' then
      return notify('the run has not ended: fork from a run that has', vim.log.levels.WARN)
    end
    local m = by_message and message_at(s, run.id, lnum)
    params.atEvent = m and m.sequence or last
  end
  if p and not ((p.capabilities or {}).fork or {}).atEnd then
    return notify(('%s cannot fork a session'):format(p.id), vim.log.levels.WARN)
  end
  M.call('session/fork', params, function(result)
    local info = result.session
    local fork = M.session(info.sessionId, info)
    fork.chosen = s.chosen
    M.open(info)
    local cut = result.providerSequence
    if params.atEvent and type(cut) == 'number' and cut < params.atEvent then
      notify(('the fork shows the history up to event %d, but the agent remembers it only up to event %d'
        .. ' (its last complete message there)'):format(params.atEvent, cut))
    end
  end)
end

--- :AgentBridge diff [n]: edit `n` of the current session (default: the last) in a diff
--- view — the old text from a temporary file, :diffsplit against the new text.
function M.diff(n)
  local s = M.current()
  if not s or #s.edits == 0 then
    return notify('no edits in this session yet', vim.log.levels.WARN)
  end
  local edit = s.edits[tonumber(n) or #s.edits]
  if not edit then
    return notify('no edit ' .. tostring(n), vim.log.levels.WARN)
  end
  vim.cmd('tabnew')
  local new = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_name(new, ('agent-bridge://edit/%s/%d/%s'):format(s.id, tonumber(n) or #s.edits, edit.path))
  vim.bo[new].buftype = 'nofile'
  vim.bo[new].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(new, 0, -1, false, vim.split(edit.newText, '\n', { plain = true }))
  local ft = vim.filetype.match({ filename = edit.path })
  if ft then
    vim.bo[new].filetype = ft
  end
  local old = vim.fn.tempname() .. '-' .. vim.fn.fnamemodify(edit.path, ':t')
  vim.fn.writefile(vim.split(edit.oldText or '', '\n', { plain = true }), old)
  vim.cmd('vertical diffsplit ' .. vim.fn.fnameescape(old))
  vim.bo.bufhidden = 'wipe'
  vim.bo.readonly = true
end

--- :AgentBridge log: the protocol traffic log (both directions), updated live.
function M.log()
  local c = M.state.client
  local buf = M.state.log_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, 'agent-bridge://log')
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].filetype = 'agentbridgelog'
    M.state.log_buf = buf
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, c and c.log or { '(the bridge is not running)' })
  vim.cmd('split')
  vim.api.nvim_win_set_buf(0, buf)
end

function M._on_log(line)
  local buf = M.state.log_buf
  if buf and vim.api.nvim_buf_is_valid(buf) then
    vim.schedule(function()
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim_buf_set_lines(buf, -1, -1, false, { line })
      end
    end)
  end
end

--- :AgentBridge stop: shut the bridge down (its sessions are kept in the journal and can
--- be reopened with :AgentBridge sessions); `done()` after it exited.
function M.stop(done)
  local c = M.state.client
  if not c then
    if done then
      done()
    end
    return
  end
  c.stopping = true
  c:stop(function()
    if M.state.client == c then
      M.state.client = nil
    end
    for _, s in pairs(M.state.sessions) do
      s.pending = {}
    end
    queue, held = {}, {}
    if done then
      done()
    end
  end)
end

--- :AgentBridge close: close the current session.
function M.close()
  local s = M.current()
  if s then
    M.call('session/close', { sessionId = s.id }, function(result)
      M.session(s.id, result.session)
    end)
  end
end

--- Continue `info` (a NativeSessionInfo of provider `provider_id`) in the bridge
--- (`provider/sessions/continue`: bound to one bridge session, its earlier turns
--- imported) and open that session's chat here.
function M.continue_native(provider_id, info)
  M.call('provider/sessions/continue', { provider = provider_id, sessionRef = info.sessionRef }, function(result)
    M.open(result.session)
  end)
end

--- :AgentBridge native [provider]: a provider's own sessions (made in its CLI), newest
--- first; pick one to read its history in a read-only buffer, where `c` continues it in a
--- chat (where the provider can). Without a provider: the first one that can list them.
function M.native(provider_id)
  M.call('providers/list', {}, function(result)
    M.state.providers = result.providers
    local provider
    for _, p in ipairs(result.providers) do
      local ns = (p.capabilities or {}).nativeSessions or {}
      if (provider_id and p.id == provider_id) or (not provider_id and ns.list == 'supported') then
        provider = p
        break
      end
    end
    if not provider then
      return notify(provider_id and ('no provider %q'):format(provider_id)
        or 'no provider here can list its own sessions', vim.log.levels.ERROR)
    end
    M.call('provider/sessions/list', { provider = provider.id }, function(list)
      local sessions = list.sessions or {}
      if #sessions == 0 then
        return notify(('no %s sessions found'):format(provider.id))
      end
      vim.ui.select(sessions, {
        prompt = provider.id .. ' sessions',
        kind = 'agent_bridge.native_session',
        format_item = native.label,
      }, function(info)
        if not info then
          return
        end
        local records = {}
        local function read(cursor)
          local params = { provider = provider.id, sessionRef = info.sessionRef, limit = 1000 }
          if cursor then
            params.cursor = cursor
          end
          M.call('provider/sessions/read', params, function(page)
            local got = page.records or {}
            vim.list_extend(records, got)
            if #got > 0 and page.nextCursor and #records < 100000 then
              return read(page.nextCursor)
            end
            local can = ((provider.capabilities or {}).nativeSessions or {}).continue == 'supported'
            native.show(provider, info, records, can and function()
              M.continue_native(provider.id, info)
            end or nil)
          end)
        end
        read(nil)
      end)
    end)
  end)
end

--- The picker's label of a `continue` entry ({kind, info, provider}).
local function continue_label(e)
  local info = e.info
  local title = info.title or '(untitled)'
  if #title > 60 then
    title = title:sub(1, 59) .. '…'
  end
  local whose = e.kind == 'bridge' and (info.providerId .. ', bridge session')
    or (e.provider .. "'s own session")
  local id = e.kind == 'bridge' and info.sessionId or info.sessionRef:sub(-12)
  return ('%s · %s · %s · %s'):format(title, whose, info.updatedAt or info.createdAt or '', id)
end

--- :AgentBridge continue: continue a session of the working directory — one of the
--- bridge's (`session/list`) or one a provider keeps itself (`provider/sessions/list` of
--- every installed provider that can list them, e.g. made with `claude` in a terminal),
--- newest first, each once. A bridge session reopens; a provider's own is continued in
--- the bridge (`provider/sessions/continue`) and its chat opens.
function M.continue_session()
  local cwd = vim.fn.getcwd()
  local workspace = vim.uv.fs_realpath(cwd) or cwd
  M.call('session/list', { workspace = workspace }, function(result)
    local entries, held = {}, {}
    for _, info in ipairs(result.sessions or {}) do
      table.insert(entries, { kind = 'bridge', info = info })
      held[info.sessionId] = true
    end
    M.call('providers/list', { probe = true }, function(pl)
      M.state.providers = pl.providers
      local waiting = 1
      local function done()
        waiting = waiting - 1
        if waiting > 0 then
          return
        end
        if #entries == 0 then
          return notify('no sessions of ' .. workspace .. ' to continue')
        end
        table.sort(entries, function(a, b)
          return (a.info.updatedAt or '') > (b.info.updatedAt or '')
        end)
        vim.ui.select(entries, {
          prompt = 'Continue a session',
          kind = 'agent_bridge.continue',
          format_item = continue_label,
        }, function(e)
          if not e then
            return
          elseif e.kind == 'bridge' then
            M.open(e.info)
          else
            M.continue_native(e.provider, e.info)
          end
        end)
      end
      for _, p in ipairs(pl.providers or {}) do
        local ns = (p.capabilities or {}).nativeSessions or {}
        if ns.list == 'supported' and (p.availability or {}).status ~= 'unavailable' then
          waiting = waiting + 1
          M.call('provider/sessions/list', { provider = p.id, workspace = workspace, limit = 50 }, function(r)
            for _, info in ipairs(r.sessions or {}) do
              if not held[info.bridgeSessionId or ''] then
                table.insert(entries, { kind = 'native', info = info, provider = p.id })
              end
            end
            done()
          end, done)
        end
      end
      done()
    end)
  end)
end

--- :AgentBridge model (gm in the chat): switch the current session's model or mode
--- between runs — the choices `session/settings` offers (the current ones marked), the one
--- picked set with `session/configure`; the `settings.updated` that follows shows it.
function M.settings()
  local s = M.current()
  if not s then
    return notify('no session: :AgentBridge new or :AgentBridge sessions', vim.log.levels.WARN)
  end
  M.call('session/settings', { sessionId = s.id }, function(settings)
    local choices = {}
    for _, key in ipairs({ 'model', 'mode' }) do
      local setting = settings[key]
      for _, item in ipairs(setting and setting.available or {}) do
        table.insert(choices, { key = key, id = item.id, name = item.name, current = item.id == setting.current })
      end
    end
    if #choices == 0 then
      return notify(('%s offers no model or mode to choose'):format(s.provider or '?'))
    end
    vim.ui.select(choices, {
      prompt = 'Model or mode',
      kind = 'agent_bridge.settings',
      format_item = function(c)
        return ('%s %s%s%s'):format(c.key, c.id, (c.name and c.name ~= c.id) and (' (' .. c.name .. ')') or '',
          c.current and ' — current' or '')
      end,
    }, function(c)
      if c then
        M.call('session/configure', { sessionId = s.id, [c.key] = c.id })
      end
    end)
  end)
end

M.subcommands = {
  continue = function() M.continue_session() end,
  model = function() M.settings() end,
  new = function(args) M.new_session(args) end,
  prompt = function(args) M.prompt(table.concat(args, ' ')) end,
  send = function(args, opts) M.send(args, opts) end,
  fork = function(args) M.fork(tonumber(args[1])) end,
  cancel = function() M.cancel() end,
  sessions = function() M.sessions() end,
  native = function(args) M.native(args[1]) end,
  approvals = function() M.approvals() end,
  diff = function(args) M.diff(args[1]) end,
  log = function() M.log() end,
  close = function() M.close() end,
  stop = function() M.stop() end,
}

--- The :AgentBridge command.
---@param opts table the user command's opts
function M.command(opts)
  local args = vim.deepcopy(opts.fargs)
  local sub = table.remove(args, 1) or 'sessions'
  local f = M.subcommands[sub]
  if not f then
    return notify('unknown subcommand ' .. sub .. ' (see :help agent-bridge)', vim.log.levels.ERROR)
  end
  f(args, opts)
end

function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, '%s+', { trimempty = false })
  if #words <= 2 then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.tbl_filter(function(n) return vim.startswith(n, arglead) end, names)
  end
  if words[2] == 'new' and #words == 3 then
    local ids = {}
    for _, p in ipairs(M.state.providers or {}) do
      table.insert(ids, p.id)
    end
    return ids
  end
  return {}
end

return M
