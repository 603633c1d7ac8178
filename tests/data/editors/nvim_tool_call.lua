-- A tool call reported in three tool.activity events (started with its input, output,
-- completed with an exit code) in a real headless Neovim against the real bridge: the
-- header is rewritten in place each time (never a stale "[running]" left behind, never
-- the "input:" line overwritten). Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({})
local ab, chat, outcome = h.ab, h.chat, h.outcome
h.run(function()
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Tools')
  assert(vim.wait(20000, function() return ab.current() ~= nil end, 20), 'no session')
  vim.cmd('AgentBridge prompt Build it')
  assert(vim.wait(20000, function()
    return vim.tbl_contains(chat.lines(ab.current()), '✓ done (end_turn)')
  end, 20), 'no end: ' .. table.concat(chat.lines(ab.current()), '\n'))
  outcome.session = ab.current().id
  outcome.lines = chat.lines(ab.current())
end)
