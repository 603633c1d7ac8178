--- The prompt area of a chat: a small buffer in a window below the chat window, where the
--- user writes a prompt (several lines if needed) and sends it: `<CR>` in normal mode, or
--- the configured insert-mode key (`send_key`, default `<C-s>`). Sending clears it.
local M = {}

--- The input buffer of session `s` (created on first use).
---@param s table the session's state
---@param keys table { send = fn(text), cancel = fn() , send_key = string }
---@return integer buf
function M.buffer(s, keys)
  if s.input_buf and vim.api.nvim_buf_is_valid(s.input_buf) then
    return s.input_buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, 'agent-bridge://input/' .. s.id)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'agentbridge_input'
  vim.b[buf].agent_bridge_input = s.id
  local function send()
    local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
    if text == '' then
      return
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    keys.send(text)
  end
  local o = { buffer = buf, nowait = true, silent = true }
  vim.keymap.set('n', '<CR>', send, vim.tbl_extend('force', o, { desc = 'agent-bridge: send the prompt' }))
  vim.keymap.set('i', keys.send_key or '<C-s>', function()
    vim.cmd('stopinsert')
    send()
  end, vim.tbl_extend('force', o, { desc = 'agent-bridge: send the prompt' }))
  -- <C-x><C-o> completes a `/command` at the start of the prompt
  vim.bo[buf].omnifunc = "v:lua.require'agent_bridge'.complete_command"
  vim.keymap.set('n', '<C-c>', keys.cancel, vim.tbl_extend('force', o, { desc = 'agent-bridge: interrupt the run' }))
  s.input_buf = buf
  return buf
end

--- Show the prompt area of `s` below its chat window `chat_win` (once), `height` lines
--- high. Returns its window.
---@return integer win
function M.show(s, chat_win, keys, height)
  local buf = M.buffer(s, keys)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    return win
  end
  local here = vim.api.nvim_get_current_win()
  vim.api.nvim_set_current_win(chat_win)
  vim.cmd(('belowright %dsplit'):format(height or 4))
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].winfixheight = true
  s.send_key = keys.send_key
  M.refresh_bar(s)
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  if vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
  return win
end

--- The prompt area's bar (a window's winbar): how to send, the context attached to the
--- next prompt and, while the session has pending approvals or questions (they are not
--- asked over the prompt area while the user types), how many and where to answer them.
---@return string
function M.bar()
  local buf = vim.api.nvim_win_get_buf(vim.g.statusline_winid or 0)
  local id = vim.b[buf].agent_bridge_input
  local ab = require('agent_bridge')
  local s = id and ab.state.sessions[id]
  if not s then
    return ''
  end
  local attached = {}
  for _, b in ipairs(s.context or {}) do
    table.insert(attached, ab.describe_block(b))
  end
  local bar = ('prompt%s · <CR> sends (insert: %s) · <C-c> interrupts'):format(
    #attached > 0 and (' with ' .. table.concat(attached, ', ')) or '', s.send_key or '<C-s>')
  local n = ab.pending_count(s)
  if n > 0 then
    bar = ('%s · %d pending: a, ga or gr in the chat'):format(bar, n)
  end
  return (bar:gsub('%%', '%%%%'))
end

--- Show the prompt area's bar (`M.bar`) in its window, redrawn now.
---@param s table
function M.refresh_bar(s)
  local win = s.input_buf and vim.fn.bufwinid(s.input_buf) or -1
  if win == -1 then
    return
  end
  vim.wo[win].winbar = "%{%v:lua.require'agent_bridge.input'.bar()%}"
  vim.cmd('redrawstatus!')
end

return M
