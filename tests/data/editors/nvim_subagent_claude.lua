-- A real claude CLI (its model a loopback stand-in) starts a subagent that asks to run a
-- command, in a real headless Neovim against the real bridge: the approval says the
-- subagent asks (answered through vim.ui.select), the subagent's Bash call is nested in
-- the agent's block. Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { asked = {} } })
local ab, chat, outcome = h.ab, h.chat, h.outcome
vim.ui.select = function(items, opts, on_choice)
  table.insert(outcome.asked, opts.prompt)
  vim.schedule(function() on_choice(items[1]) end) -- Allow once
end
h.run(function()
  vim.cmd('cd ' .. vim.fn.fnameescape(os.getenv('AB_WORK')))
  vim.cmd('AgentBridge new claude-code title=Sub')
  assert(vim.wait(60000, function() return ab.current() ~= nil end, 20), 'no session')
  local s = ab.current()
  vim.api.nvim_set_current_win(vim.fn.bufwinid(s.buf)) -- not typing: asked at once
  vim.cmd('AgentBridge prompt delegate please')
  assert(vim.wait(90000, function()
    return vim.tbl_contains(chat.lines(s), '✓ done (end_turn)')
  end, 20), 'no end: ' .. table.concat(chat.lines(s), '\n'))
  outcome.lines = chat.lines(s)
end)
