-- Subagents in a real headless Neovim against the real bridge: a tool call that runs a
-- subagent is a block headed by the agent (type, description, status, usage); the tool
-- calls made inside it (parentToolCallId) are blocks nested in it, each rewritten in
-- place, folded one level deeper. Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({})
local ab, chat, outcome = h.ab, h.chat, h.outcome
h.run(function()
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
