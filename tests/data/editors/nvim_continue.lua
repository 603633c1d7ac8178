-- :AgentBridge continue, in a real headless Neovim against the real bridge and the real
-- claude CLI (its model a loopback stand-in): the working directory holds a bridge session
-- (scripted) and a session made with `claude -p` alone; the picker offers both; the Claude
-- Code one, picked, is continued in a chat and a prompt is answered in that conversation;
-- offered again it is a bridge session (once); the scripted one, picked, reopens.
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK, AB_SCRIPT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ stop_bridge = true })
local ab, chat, outcome = h.ab, h.chat, h.outcome
vim.notify = function(msg) outcome.note = msg end
local pick -- the label pattern vim.ui.select picks
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item or tostring, items)
  table.insert(outcome.pickers, { prompt = opts.prompt, labels = labels })
  for i, l in ipairs(labels) do
    if l:find(pick, 1, true) then
      return vim.schedule(function() on_choice(items[i], i) end)
    end
  end
  vim.schedule(function() on_choice(nil) end)
end
local function wait_for(what, pred)
  assert(vim.wait(60000, pred, 20), 'timed out waiting for ' .. what .. '; note: ' .. tostring(outcome.note))
end
outcome.pickers = {}
h.run(function()
  vim.cmd('cd ' .. vim.fn.fnameescape(os.getenv('AB_WORK')))
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Bridge-one')
  wait_for('the scripted session', function() return ab.current() ~= nil end)
  local bridge_one = ab.current()
  -- 1. the Claude Code session made in the terminal, continued
  pick = "claude-code's own session"
  vim.cmd('AgentBridge continue')
  wait_for('the continued chat', function()
    local s = ab.current()
    return s ~= nil and s ~= bridge_one and vim.tbl_contains(chat.lines(s), 'Noted: pelican.')
  end)
  local s = ab.current()
  outcome.provider = s.provider
  outcome.continued = s.id
  ab.prompt('what was the word?')
  wait_for('the reply', function() return vim.tbl_contains(chat.lines(s), '✓ done (end_turn)') end)
  outcome.chat = chat.lines(s)
  -- 2. offered again: the scripted one, picked, reopens
  pick = 'Bridge-one'
  vim.cmd('AgentBridge continue')
  wait_for('the scripted session again', function() return ab.current() == bridge_one end)
  outcome.bridge_one = bridge_one.id
end)
