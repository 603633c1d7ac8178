-- The model and mode of a session switched from the chat, in a real headless Neovim
-- against the real bridge: `gm` offers what session/settings gives (the scripted
-- provider's `settings`), the one picked is set with session/configure, the chat and the
-- bar show the settings.updated that follows; a provider offering none says so.
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT, AB_SCRIPT, AB_PLAIN (a script with none).
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { pickers = {} }, stop_bridge = true })
local ab, chat, outcome = h.ab, h.chat, h.outcome
vim.notify = function(msg) outcome.note = msg end
local pick
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item or tostring, items)
  table.insert(outcome.pickers, labels)
  for i, l in ipairs(labels) do
    if vim.startswith(l, pick) then
      return vim.schedule(function() on_choice(items[i], i) end)
    end
  end
  vim.schedule(function() on_choice(nil) end)
end
local function wait_for(what, pred)
  assert(vim.wait(20000, pred, 20), 'timed out waiting for ' .. what .. '; note: ' .. tostring(outcome.note))
end
h.run(function()
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Settings')
  wait_for('the session', function() return ab.current() ~= nil end)
  local s = ab.current()
  vim.api.nvim_set_current_buf(s.buf)
  pick = 'model large'
  vim.api.nvim_feedkeys('gm', 'xt', false)
  wait_for('the model', function() return vim.tbl_contains(chat.lines(s), '— model large · mode ask') end)
  pick = 'mode auto'
  vim.cmd('AgentBridge model')
  wait_for('the mode', function() return vim.tbl_contains(chat.lines(s), '— model large · mode auto') end)
  vim.g.statusline_winid = vim.fn.bufwinid(s.buf)
  outcome.bar = ab.winbar()
  -- a provider that offers none
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_PLAIN') .. ' title=Plain')
  wait_for('the second session', function() return ab.current() ~= s end)
  local asked = #outcome.pickers
  outcome.note = nil
  vim.cmd('AgentBridge model')
  wait_for('the note', function() return outcome.note ~= nil end)
  outcome.none = outcome.note
  outcome.asked_for_none = #outcome.pickers > asked
end)
