-- A real claude CLI (its model a loopback stand-in) starts a subagent that asks to run a
-- command, in a real headless Neovim against the real bridge: the approval says the
-- subagent asks (answered through vim.ui.select), the subagent's Bash call is nested in
-- the agent's block. Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK.
local out_path = assert(os.getenv('AB_OUT'))
local outcome = { asked = {} }
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
vim.ui.select = function(items, opts, on_choice)
  table.insert(outcome.asked, opts.prompt)
  vim.schedule(function() on_choice(items[1]) end) -- Allow once
end
local ok, err = pcall(function()
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
outcome.ok = ok
outcome.error = not ok and tostring(err) or nil
save()
vim.cmd(ok and 'qall!' or 'cquit!')
