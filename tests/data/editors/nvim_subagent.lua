-- Subagents in a real headless Neovim against the real bridge: a tool call that runs a
-- subagent is a block headed by the agent (type, description, status, usage); the tool
-- calls made inside it (parentToolCallId) are blocks nested in it, each rewritten in
-- place, folded one level deeper. Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
local out_path = assert(os.getenv('AB_OUT'))
local outcome = {}
local function save()
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(outcome))
  f:close()
end
vim.opt.rtp:prepend(assert(os.getenv('AB_PLUGIN')))
vim.cmd('runtime plugin/agent_bridge.lua')
local ab = require('agent_bridge')
local chat = require('agent_bridge.chat')
ab.setup({ cmd = { os.getenv('AB_BRIDGE') }, state_dir = os.getenv('AB_STATE') })
local ok, err = pcall(function()
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Agents')
  assert(vim.wait(20000, function() return ab.current() ~= nil end, 20), 'no session')
  local s = ab.current()
  vim.cmd('AgentBridge prompt Find the build')
  assert(vim.wait(20000, function()
    return vim.tbl_contains(chat.lines(s), '✓ done (end_turn)')
  end, 20), 'no end: ' .. table.concat(chat.lines(s), '\n'))
  outcome.session = s.id
  outcome.lines = chat.lines(s)
  -- the folds: the agent's block closed, its tool calls nested one level deeper
  local win = vim.fn.bufwinid(s.buf)
  vim.api.nvim_set_current_win(win)
  outcome.levels = {}
  for i = 1, vim.api.nvim_buf_line_count(s.buf) do
    table.insert(outcome.levels, vim.fn.foldlevel(i))
  end
  local agent = vim.fn.index(outcome.lines, '▸ agent Explore: Find the build files [completed, 2 tool uses, 1200 tokens, 1.5 s]') + 1
  outcome.agent_closed = agent > 0 and vim.fn.foldclosed(agent) == agent
  outcome.agent_fold_end = vim.fn.foldclosedend(agent)
end)
outcome.ok = ok
outcome.error = not ok and tostring(err) or nil
save()
vim.cmd(ok and 'qall!' or 'cquit!')
