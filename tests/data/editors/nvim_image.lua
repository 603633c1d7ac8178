-- An image file sent as context, in a real headless Neovim against the real bridge:
-- :AgentBridge send from an image file's buffer sends an `image` block, by its path inside
-- the workspace (the working directory), by its bytes from elsewhere; the scripted
-- provider's `received` step answers with what it got. Env: AB_PLUGIN, AB_BRIDGE,
-- AB_STATE, AB_OUT, AB_SCRIPT, AB_WORK, AB_OUTSIDE (an image outside the workspace).
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({})
local ab, chat, outcome = h.ab, h.chat, h.outcome
local wait_for, received = h.wait_for, h.received

local function done(s)
  return h.count(s, '✓ done (end_turn)')
end

h.run(function()
  vim.cmd.cd(assert(os.getenv('AB_WORK')))
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Images')
  wait_for('the session', function() return ab.current() ~= nil end)
  local s = ab.current()
  vim.cmd('tabnew shot.png')
  vim.cmd('AgentBridge send What is on it?')
  wait_for('run 1', function() return done(s) == 1 end)
  outcome.inside = received(s)
  vim.cmd('edit ' .. vim.fn.fnameescape(assert(os.getenv('AB_OUTSIDE'))))
  vim.cmd('AgentBridge send And this one?')
  wait_for('run 2', function() return done(s) == 2 end)
  outcome.outside = received(s)
  outcome.lines = chat.lines(s)
end)
