-- An image file sent as context, in a real headless Neovim against the real bridge:
-- :AgentBridge send from an image file's buffer sends an `image` block, by its path inside
-- the workspace (the working directory), by its bytes from elsewhere; the scripted
-- provider's `received` step answers with what it got. Env: AB_PLUGIN, AB_BRIDGE,
-- AB_STATE, AB_OUT, AB_SCRIPT, AB_WORK, AB_OUTSIDE (an image outside the workspace).
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

local function done(s)
  local n = 0
  for _, l in ipairs(chat.lines(s)) do
    if l == '✓ done (end_turn)' then
      n = n + 1
    end
  end
  return n
end
local function wait_for(what, pred)
  if not vim.wait(20000, pred, 20) then
    error('timed out waiting for ' .. what .. ': ' .. table.concat(chat.lines(ab.current()), '\n'), 0)
  end
end
local function received(s)
  local lines = chat.lines(s)
  for i = #lines, 1, -1 do
    if lines[i]:sub(1, 2) == '[{' then
      return vim.json.decode(lines[i])
    end
  end
end

local ok, err = pcall(function()
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
outcome.ok = ok
if not ok then
  outcome.error = tostring(err)
end
save()
vim.cmd('qall!')
