-- A whole scripted session driven through the plugin's own :AgentBridge commands in a
-- real headless Neovim, against the real bridge. vim.ui.select / vim.ui.input (the
-- editor's prompt seam) are stubbed to pick the labels queued in `picks`.
-- Env: AB_PLUGIN (editors/neovim), AB_BRIDGE (the agent-bridge executable), AB_STATE (state
-- dir), AB_SCRIPT (the scripted provider's script file), AB_OUT (the outcome, JSON).
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { steps = {}, notes = {}, asked = {} }, setup = false })
local ab, chat, outcome = h.ab, h.chat, h.outcome
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
  if not want then
    fail('unexpected prompt: ' .. tostring(opts.prompt))
  end
  for i, label in ipairs(labels) do
    if label:find(want) then
      return vim.schedule(function() on_choice(items[i], i) end)
    end
  end
  fail(('no %q in %s'):format(want, table.concat(labels, ' | ')))
end
vim.ui.input = function(opts, on_confirm)
  table.insert(outcome.asked, { prompt = opts.prompt })
  local want = table.remove(picks, 1)
  vim.schedule(function() on_confirm(want) end)
end

local function has(text)
  for _, l in ipairs(lines()) do
    if l == text then
      return true
    end
  end
  return false
end

local function count(text)
  local n = 0
  for _, l in ipairs(lines()) do
    if l == text then
      n = n + 1
    end
  end
  return n
end

local function wait_for(what, pred)
  if not vim.wait(20000, pred, 20) then
    outcome.lines = lines()
    fail('timed out waiting for ' .. what)
  end
  table.insert(outcome.steps, what)
end

-- 1. A bridge that is not there: a clear message with the next step.
ab.setup({ cmd = { '/nonexistent/agent-bridge' } })
vim.cmd('AgentBridge sessions')
outcome.missing_bridge = outcome.notes[#outcome.notes] and outcome.notes[#outcome.notes].msg
-- Nothing configured, no agent-bridge on PATH, but a uvx there: no `uvx agent-bridge`
-- (it does not resolve before a release), the install step that works now instead.
do
  local bin = vim.fn.tempname()
  vim.fn.mkdir(bin, 'p')
  vim.fn.writefile({ '#!/bin/sh', 'exit 1' }, bin .. '/uvx')
  vim.fn.setfperm(bin .. '/uvx', 'rwxr-xr-x')
  local saved = vim.env.PATH
  vim.env.PATH = bin
  ab.config.cmd = nil -- setup{} merges, so a cmd set before stays: clear it
  vim.cmd('AgentBridge sessions')
  vim.env.PATH = saved
  outcome.missing_on_path = outcome.notes[#outcome.notes] and outcome.notes[#outcome.notes].msg
end

-- 2. The real bridge, where Claude Code is not installed. The pickers: provider (from
--    providers/list, saying what is unavailable), model (free text), mode (the enum's
--    values); an unavailable provider is refused with its next step.
ab.setup({
  cmd = { os.getenv('AB_BRIDGE') },
  state_dir = os.getenv('AB_STATE'),
  env = { PATH = '/usr/bin:/bin', AGENT_BRIDGE_CLAUDE_PATH = '/nonexistent/claude' },
})
picks = { 'claude%-code', 'sonnet', '^plan$' }
local before = #outcome.notes
vim.cmd('AgentBridge new')
wait_for('the pickers', function() return #outcome.notes > before end)
outcome.pickers = vim.deepcopy(outcome.asked)
outcome.asked = {}
outcome.unavailable = outcome.notes[#outcome.notes].msg

-- 3. A new session from the command line (no pickers).
vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Fix-the-build')
wait_for('session created', function() return ab.current() ~= nil end)
vim.cmd('wincmd k') -- from the prompt area (approvals are not asked there) to the chat
local s = ab.current()
outcome.session = s.id

-- 4. A run: streamed text and thinking, an approval (allowed for the session), an edit,
--    a question answered.
picks = { 'Allow for this session', 'Yes' }
vim.cmd('AgentBridge prompt Fix the build')
wait_for('run 1 done', function() return has('✓ done (end_turn)') end)
outcome.run1 = lines()

-- Folds: the thinking block and the tool call are closed folds in the chat window.
local win = vim.fn.bufwinid(s.buf)
vim.api.nvim_set_current_win(win)
local folds = {}
for i, l in ipairs(lines()) do
  if vim.startswith(l, chat.HEADER) then
    table.insert(folds, { line = l, closed = vim.fn.foldclosed(i) == i, ends = vim.fn.foldclosedend(i) })
  end
end
outcome.folds = folds
outcome.winbar = ab.winbar()

-- 5. The edit in a diff view.
vim.cmd('AgentBridge diff')
local diff_wins = vim.tbl_filter(function(w) return vim.wo[w].diff end, vim.api.nvim_tabpage_list_wins(0))
outcome.diff = { windows = #diff_wins, buffers = {} }
for _, w in ipairs(diff_wins) do
  local b = vim.api.nvim_win_get_buf(w)
  table.insert(outcome.diff.buffers, { name = vim.api.nvim_buf_get_name(b), lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) })
end
vim.cmd('tabclose')
vim.api.nvim_set_current_win(vim.fn.bufwinid(s.buf))

-- 6. A run interrupted.
vim.cmd('AgentBridge prompt Keep going')
wait_for('run 2 streaming', function() return has('Working on it...') end)
vim.cmd('AgentBridge cancel')
wait_for('run 2 interrupted', function() return has('✗ interrupted (user)') end)

-- 7. The traffic log.
vim.cmd('AgentBridge log')
local log_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
outcome.log_head = vim.list_slice(log_lines, 1, 4)
outcome.log_has_approval_reply = false
for _, l in ipairs(log_lines) do
  if l:find('^> interaction/request %(reply%)') then
    outcome.log_has_approval_reply = true
  end
end
vim.cmd('close')

-- 8. The bridge restarts (same state dir); the session is listed and reopened, the chat
--    buffer continues with no gap and no duplicate, and a new run works.
local stopped = false
ab.stop(function() stopped = true end)
wait_for('bridge stopped', function() return stopped end)
picks = { 'Fix%-the%-build' }
vim.cmd('AgentBridge sessions')
wait_for('session resumed', function() return has('— session resumed') end)
outcome.session_list = outcome.asked[#outcome.asked].labels
vim.cmd('AgentBridge prompt again')
wait_for('run 3 done', function() return count('✓ done (end_turn)') == 2 end)
outcome.final = lines()
outcome.tests_pass_count = count('Tests pass.')

-- 9. The model and mode chosen are in the chat's bar: a Claude Code session (its CLI the
--    project's stand-in, given as the executable option) with a model and a mode.
local before = ab.current()
vim.cmd('AgentBridge new claude-code executable=' .. os.getenv('AB_FAKE_CLAUDE')
  .. ' model=sonnet permissionMode=plan title=Chosen')
wait_for('the claude-code session', function() return ab.current() ~= before end)
outcome.chosen_winbar = ab.winbar()
ab.stop(function() stopped = 'again' end)
vim.wait(10000, function() return stopped == 'again' end, 20)
outcome.ok = true
save()
vim.cmd('qall!')
