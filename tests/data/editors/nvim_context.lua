-- Context and slash commands, in a real headless Neovim against the real bridge (the
-- scripted provider's `received` step answers with the blocks the run's input held):
-- :'<,'>AgentBridge send with a selection sends a `file` block with its lines; without
-- text the current file is attached to the prompt area's next prompt (its bar says so);
-- an unsaved buffer goes as a `resource` with its text; `/re<C-x><C-o>` in the prompt
-- area completes a command from session/commands, sent as a `command` block; a
-- commands.updated event changes what completes. Env: AB_PLUGIN, AB_BRIDGE, AB_STATE,
-- AB_SCRIPT, AB_OUT, AB_WORK (the workspace: the editor's working directory).
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({})
local ab, chat, outcome = h.ab, h.chat, h.outcome
local type_keys, count, wait_for, received = h.type_keys, h.count, h.wait_for, h.received
vim.ui.select = function(_, _, on_choice)
  vim.schedule(function() on_choice(nil) end)
end

h.run(function()
  vim.cmd('cd ' .. vim.fn.fnameescape(os.getenv('AB_WORK')))
  vim.cmd('edit src.py')
  local src_win = vim.api.nvim_get_current_win()
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Context')
  wait_for('the session', function() return ab.current() ~= nil end)
  local s = ab.current()
  wait_for('the commands', function() return #s.commands > 0 end)
  -- 1. lines 2-4 of src.py, selected in visual mode, sent with a prompt
  vim.api.nvim_set_current_win(src_win)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  type_keys('Vjj:AgentBridge send Explain this<CR>')
  wait_for('run 1', function() return count(s, '✓ done (end_turn)') == 1 end)
  outcome.selection = received(s)
  -- 2. the whole file attached to the prompt area's next prompt
  vim.api.nvim_set_current_win(src_win)
  vim.cmd('AgentBridge send')
  outcome.attached_in_input = vim.api.nvim_get_current_buf() == s.input_buf
  -- the prompt area's bar as shown (its winbar is an expression)
  local function shown_bar(win)
    return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 1000 }).str
  end
  outcome.bar = shown_bar(vim.api.nvim_get_current_win())
  type_keys('iWhat is it?<Esc><CR>')
  wait_for('run 2', function() return count(s, '✓ done (end_turn)') == 2 end)
  outcome.whole_file = received(s)
  outcome.bar_after = shown_bar(vim.fn.bufwinid(s.input_buf))
  -- 3. an unsaved buffer: its text as a resource
  vim.api.nvim_set_current_win(src_win)
  vim.cmd('enew')
  outcome.scratch = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'x = 1', 'y = 2' })
  vim.cmd('AgentBridge send Look')
  wait_for('run 3', function() return count(s, '✓ done (end_turn)') == 3 end)
  outcome.resource = received(s)
  -- 4. a slash command completed in the prompt area, sent as a command block
  vim.api.nvim_set_current_win(vim.fn.bufwinid(s.input_buf))
  type_keys('i/re<C-x><C-o><Esc>')
  outcome.completed = vim.api.nvim_buf_get_lines(s.input_buf, 0, -1, false)
  type_keys('Aerror handling<Esc><CR>')
  wait_for('run 4', function() return count(s, '✓ done (end_turn)') == 4 end)
  outcome.command = received(s)
  -- 5. a run whose provider changes its commands (commands.updated)
  type_keys('iAdd a command<Esc><CR>')
  wait_for('run 5', function() return count(s, '✓ done (end_turn)') == 5 end)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(s.input_buf))
  type_keys('i/t<C-x><C-o><Esc>')
  outcome.completed_after_update = vim.api.nvim_buf_get_lines(s.input_buf, 0, -1, false)
  vim.api.nvim_buf_set_lines(s.input_buf, 0, -1, false, {})
  outcome.items = ab.complete_command(0, '/')
  outcome.session = s.id
  outcome.lines = chat.lines(s)
end)
