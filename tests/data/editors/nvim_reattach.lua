-- Reattach through the daemon, in two real headless Neovims (AB_PHASE 1 then 2), both
-- on `agent-bridge connect` (the same daemon and state dir):
-- 1. a run asks an approval; its prompt is dismissed, so it stays pending; Neovim quits
--    (the host detaches, the run goes on waiting in the daemon);
-- 2. a fresh Neovim lists the session (active), reattaches: the history is replayed into
--    a new chat buffer and the pending approval is asked again; allowing it lets the run
--    finish.
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_PHASE, AB_OUT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { asked = {}, notes = {} }, setup = false })
local ab, outcome = h.ab, h.outcome
local save, fail, lines = h.save, h.fail, h.lines

vim.notify = function(msg, level)
  table.insert(outcome.notes, { msg = msg, level = level })
end

local picks = {}
vim.ui.select = function(items, opts, on_choice)
  local fmt = opts.format_item or tostring
  local labels = vim.tbl_map(fmt, items)
  local s = ab.current()
  table.insert(outcome.asked, { prompt = opts.prompt, labels = labels, pending = s and ab.pending_count(s) or 0 })
  local want = table.remove(picks, 1)
  if want == false then -- dismiss the prompt
    return vim.schedule(function() on_choice(nil, nil) end)
  end
  for i, label in ipairs(labels) do
    if want and label:find(want) then
      return vim.schedule(function() on_choice(items[i], i) end)
    end
  end
  fail(('no %q in %s'):format(tostring(want), table.concat(labels, ' | ')))
end

local function has(text)
  return vim.tbl_contains(lines(), text)
end
local function wait_for(what, pred)
  if not vim.wait(20000, pred, 20) then
    outcome.lines = lines()
    fail('timed out waiting for ' .. what)
  end
end

ab.setup({ cmd = { os.getenv('AB_BRIDGE') }, subcommand = 'connect', state_dir = os.getenv('AB_STATE') })
local script = vim.json.encode({
  steps = {
    { type = 'text', text = 'Ready to deploy.' },
    { type = 'approval', title = 'Deploy to production', modes = { 'once', 'session' },
      onAllow = { { type = 'text', text = 'Deployed after the reattach.' } },
      onDeny = { { type = 'text', text = 'Not deploying.' } } },
  },
})

if os.getenv('AB_PHASE') == '1' then
  picks = { false }
  local file = vim.fn.tempname() .. '.json'
  vim.fn.writefile({ script }, file)
  vim.cmd('AgentBridge new scripted scriptFile=' .. file .. ' title=Deploy')
  wait_for('session', function() return ab.current() ~= nil end)
  vim.cmd('wincmd k') -- from the prompt area (approvals are not asked there) to the chat
  vim.cmd('AgentBridge prompt Deploy it')
  wait_for('the approval prompt', function() return #outcome.asked == 1 end)
  vim.wait(300) -- the dismissal is applied
  outcome.session = ab.current().id
  outcome.pending = ab.pending_count(ab.current())
  outcome.lines = lines()
  outcome.ok = true
  save()
  vim.cmd('qall!') -- detaches from the daemon; the run keeps waiting there
else
  picks = { 'Deploy', 'Allow once' }
  vim.cmd('AgentBridge sessions')
  wait_for('the reasked approval', function() return #outcome.asked == 2 end)
  outcome.pending_when_reasked = outcome.asked[2].pending
  wait_for('the run to finish', function() return has('✓ done (end_turn)') end)
  outcome.session = ab.current().id
  outcome.lines = lines()
  outcome.ok = true
  save()
  local stopped = false
  ab.stop(function() stopped = true end)
  vim.wait(10000, function() return stopped end, 20)
  vim.cmd('qall!')
end
