-- Fork from a run and from a message, in a real headless Neovim against the real bridge
-- and the real claude CLI (its model a loopback stand-in): two runs, `gf` on the first
-- run's outcome line forks the session at that run's last event and opens the fork's
-- chat (the first run only); a prompt there continues from the fork. A third run of a
-- text, then a tool call, then the answer: `gf` on the text forks at its last event
-- (Claude Code forks at messages), the fork's chat ends with it; `:AgentBridge fork N`
-- at the text's first event is cut earlier by the provider, and a message says so.
-- `gf` in a scripted session is refused (its descriptor has no capabilities.fork).
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { notes = {} }, wait_ms = 60000 })
local ab, chat, outcome = h.ab, h.chat, h.outcome
local type_keys, count, wait_for = h.type_keys, h.count, h.wait_for
vim.notify = function(msg)
  table.insert(outcome.notes, msg)
end
h.run(function()
  vim.cmd('cd ' .. vim.fn.fnameescape(os.getenv('AB_WORK')))
  -- a provider that cannot fork: refused before asking the bridge
  vim.cmd('AgentBridge new scripted script={"steps":[{"type":"echo"}]} title=NoFork')
  wait_for('the scripted session', function() return ab.current() ~= nil end)
  local scripted = ab.current()
  vim.cmd('AgentBridge prompt hi')
  wait_for('its run', function() return count(scripted, '✓ done (end_turn)') == 1 end)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(scripted.buf))
  vim.cmd('normal! G')
  type_keys('gf')
  outcome.refused = outcome.notes[#outcome.notes]
  -- claude-code: two runs, then a fork from the first
  vim.cmd('AgentBridge new claude-code title=Fork allowedTools=["Bash"]')
  wait_for('the claude session', function() return ab.current() ~= scripted end)
  local s = ab.current()
  vim.cmd('AgentBridge prompt remember alpha')
  wait_for('run 1', function() return count(s, '✓ done (end_turn)') == 1 end)
  vim.cmd('AgentBridge prompt now remember beta')
  wait_for('run 2', function() return count(s, '✓ done (end_turn)') == 2 end)
  outcome.original = s.id
  local win = vim.fn.bufwinid(s.buf)
  vim.api.nvim_set_current_win(win)
  -- on the first run's outcome line: a fork at the run's end
  vim.api.nvim_win_set_cursor(win, { vim.fn.index(chat.lines(s), '✓ done (end_turn)') + 1, 0 })
  type_keys('gf')
  wait_for('the fork', function() return ab.current() ~= s end)
  local fork = ab.current()
  outcome.fork = fork.id
  wait_for('the fork history', function() return count(fork, '✓ done (end_turn)') == 1 end)
  outcome.fork_shown = vim.api.nvim_win_get_buf(0) == fork.buf or vim.fn.bufwinid(fork.buf) ~= -1
  vim.cmd('AgentBridge prompt which words do you know?')
  wait_for('the fork run', function() return count(fork, '✓ done (end_turn)') == 2 end)
  outcome.fork_lines = chat.lines(fork)
  -- back in the original: a run of a text, a tool call, the answer
  ab.show(s, false)
  win = vim.fn.bufwinid(s.buf)
  vim.api.nvim_set_current_win(win)
  vim.cmd('AgentBridge prompt look around')
  wait_for('run 3', function() return count(s, '✓ done (end_turn)') == 3 end)
  outcome.original_lines = chat.lines(s)
  local said = vim.fn.index(chat.lines(s), 'Let me look at it.') + 1
  vim.api.nvim_win_set_cursor(win, { said, 0 })
  local notes = #outcome.notes
  type_keys('gf')
  wait_for('the message fork', function() return ab.current() ~= s end)
  local mfork = ab.current()
  outcome.message_fork = mfork.id
  wait_for('the message fork history', function() return vim.tbl_contains(chat.lines(mfork), 'Let me look at it.') end)
  vim.wait(500)
  outcome.message_fork_lines = chat.lines(mfork)
  outcome.message_notes = vim.list_slice(outcome.notes, notes + 1)
  vim.cmd('AgentBridge prompt what did you say?')
  wait_for('the message fork run', function() return count(mfork, '✓ done (end_turn)') == 2 end)
  -- the text's first event: the provider is cut before that message, and says so
  local first = s.messages[#s.messages - 1]
  ab.show(s, false)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(s.buf))
  notes = #outcome.notes
  outcome.text_last = first.sequence
  vim.cmd('AgentBridge fork ' .. (first.sequence - 1))
  wait_for('the cut notice', function() return #outcome.notes > notes end)
  outcome.cut_at = first.sequence - 1
  outcome.cut_notes = vim.list_slice(outcome.notes, notes + 1)
end)
