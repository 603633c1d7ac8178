-- The chat as a user drives it, in a real headless Neovim against the real bridge: keys
-- typed (nvim_feedkeys) into the prompt area below the transcript send prompts (normal
-- <CR>, a multi-line prompt; insert <C-s>); ]] and [[ move between the folded thinking
-- and tool-call blocks; <C-c> in the chat interrupts the run.
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ outcome = { steps = {} }, stop_bridge = true })
local ab, chat, outcome = h.ab, h.chat, h.outcome
local type_keys, wait_for = h.type_keys, h.wait_for

-- The automatic approval prompt is dismissed (the approval stays pending for ga / gr).
vim.ui.select = function(_, _, on_choice)
  vim.schedule(function() on_choice(nil) end)
end

local function has(s, text)
  return vim.tbl_contains(chat.lines(s), text)
end

h.run(function()
  vim.cmd('edit ' .. vim.fn.tempname() .. '.txt') -- the user's own file, in the window
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Chat')
  wait_for('the session', function() return ab.current() ~= nil end)
  local s = ab.current()
  -- The layout: the transcript above, the prompt area below it, the cursor in it.
  local chat_win = vim.fn.bufwinid(s.buf)
  local input_win = vim.api.nvim_get_current_win()
  local input_buf = vim.api.nvim_win_get_buf(input_win)
  outcome.layout = {
    input_is_current = input_buf == s.input_buf,
    input_below_chat = vim.api.nvim_win_get_position(input_win)[1] > vim.api.nvim_win_get_position(chat_win)[1],
    same_column = vim.api.nvim_win_get_position(input_win)[2] == vim.api.nvim_win_get_position(chat_win)[2],
    input_height = vim.api.nvim_win_get_height(input_win),
  }
  -- 1. A two-line prompt typed in the prompt area, sent with <CR> in normal mode.
  type_keys('iList the<CR>files<Esc><CR>')
  outcome.input_after_send = vim.api.nvim_buf_get_lines(input_buf, 0, -1, false)
  wait_for('run 1', function() return has(s, '✓ done (end_turn)') end)
  outcome.run1 = chat.lines(s)
  -- 2. ]] and [[ in the chat: the thinking block, the tool call, and back.
  vim.api.nvim_set_current_win(chat_win)
  vim.api.nvim_win_set_cursor(chat_win, { 1, 0 })
  local visited = {}
  type_keys(']]')
  table.insert(visited, vim.api.nvim_get_current_line())
  type_keys(']]')
  table.insert(visited, vim.api.nvim_get_current_line())
  type_keys('[[')
  table.insert(visited, vim.api.nvim_get_current_line())
  outcome.visited = visited
  outcome.folded = vim.fn.foldclosed(vim.fn.line('.')) ~= -1
  -- 3. `i` in the chat goes to the prompt area; a prompt sent from insert mode (<C-s>).
  type_keys('iKeep going<C-s>')
  outcome.i_goes_to_input = vim.api.nvim_get_current_buf() == s.input_buf
  wait_for('run 2 streams', function() return has(s, 'Working on it...') end)
  outcome.mode_after_send = vim.api.nvim_get_mode().mode
  -- 4. <C-c> in the chat interrupts the run.
  vim.api.nvim_set_current_win(chat_win)
  wait_for('the run id', function() return s.active_run ~= nil end)
  type_keys('<C-c>')
  wait_for('run 2 interrupted', function() return has(s, '✗ interrupted (user)') end)
  outcome.final = chat.lines(s)
  -- 5. A proposed edit shown inline under its approval; ga in the chat accepts it.
  local function done_count()
    local n = 0
    for _, l in ipairs(chat.lines(s)) do
      if l == '✓ done (end_turn)' then
        n = n + 1
      end
    end
    return n
  end
  type_keys('iEdit it<C-s>')
  wait_for('the proposed edit', function() return ab.pending_count(s) == 1 end)
  vim.api.nvim_set_current_win(chat_win)
  local row = vim.fn.search('^▸ proposed edit', 'bw')
  outcome.proposal_folded = row > 0 and vim.fn.foldclosed(row) == row
  type_keys('ga')
  wait_for('run 3', function() return done_count() == 2 end)
  outcome.accepted = chat.lines(s)
  -- 6. The same proposed again; gr rejects it.
  type_keys('iEdit it again<C-s>')
  wait_for('the second proposal', function() return ab.pending_count(s) == 1 end)
  vim.api.nvim_set_current_win(chat_win)
  type_keys('gr')
  wait_for('run 4', function() return done_count() == 3 end)
  outcome.rejected = chat.lines(s)
end)
