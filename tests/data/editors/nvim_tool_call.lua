-- A tool call reported in three tool.activity events (started with its input, output,
-- completed with an exit code) in a real headless Neovim against the real bridge: the
-- header is rewritten in place each time (never a stale "[running]" left behind, never
-- the "input:" line overwritten). Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
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
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Tools')
  assert(vim.wait(20000, function() return ab.current() ~= nil end, 20), 'no session')
  vim.cmd('AgentBridge prompt Build it')
  assert(vim.wait(20000, function()
    return vim.tbl_contains(chat.lines(ab.current()), '✓ done (end_turn)')
  end, 20), 'no end: ' .. table.concat(chat.lines(ab.current()), '\n'))
  outcome.session = ab.current().id
  outcome.lines = chat.lines(ab.current())
end)
outcome.ok = ok
outcome.error = not ok and tostring(err) or nil
save()
vim.cmd(ok and 'qall!' or 'cquit!')
