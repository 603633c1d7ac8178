--- The chat buffer of one session: the run's events rendered as they stream. Thinking and
--- tool calls are blocks whose header starts with "▸ " and whose body lines start with
--- "  │ "; the window folds them (closed) by 'foldexpr'.
local M = {}

local ns = vim.api.nvim_create_namespace('agent_bridge_chat')
M.ns = ns

M.HEADER = '▸ '
M.BODY = '  │ '

--- 'foldexpr' of a chat window: a block header opens a fold, its body stays in it.
---@param lnum integer
---@return string
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  if vim.startswith(line, M.HEADER) then
    return '>1'
  elseif vim.startswith(line, M.BODY) then
    return '1'
  end
  return '0'
end

--- The buffer for session `s` (created on first use).
---@param s table the session's state
---@return integer buf
function M.buffer(s)
  if s.buf and vim.api.nvim_buf_is_valid(s.buf) then
    return s.buf
  end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, 'agent-bridge://chat/' .. s.id)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'agentbridge'
  vim.bo[buf].modifiable = false
  vim.b[buf].agent_bridge_session = s.id
  s.buf = buf
  s.tail = nil
  s.blocks = {}
  M.set_lines(s, 0, -1, { '# agent-bridge · ' .. (s.title or s.provider or '') .. ' · ' .. s.id })
  return buf
end

--- Show the chat buffer of `s` in a window (the current one when it shows a chat,
--- else a new split) with its folds and status line.
---@param s table
---@return integer win
function M.show(s)
  local buf = M.buffer(s)
  local win = vim.fn.bufwinid(buf)
  if win == -1 and vim.b.agent_bridge_input then
    vim.cmd('wincmd k') -- from a prompt area: its chat window is above
  end
  if win == -1 then
    if vim.b.agent_bridge_session == nil and vim.api.nvim_buf_get_name(0) ~= '' then
      vim.cmd('vsplit')
    end
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  end
  local wo = vim.wo[win]
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'agent_bridge.chat'.foldexpr(v:lnum)"
  wo.foldlevel = 0
  wo.wrap = true
  wo.linebreak = true
  wo.winbar = "%{%v:lua.require'agent_bridge'.winbar()%}"
  return win
end

---@param s table
function M.set_lines(s, first, last, lines)
  local buf = s.buf
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
end

--- Follow the end of the buffer in every window showing it.
local function follow(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    pcall(vim.api.nvim_win_set_cursor, win, { count, 0 })
  end
end

--- Append whole lines at the end; the next text delta starts a new line.
---@param s table
---@param lines string[]
---@param tail string|nil what the last line now is ('text', 'thinking' or nil)
function M.append(s, lines, tail)
  M.buffer(s)
  M.set_lines(s, -1, -1, lines)
  s.tail = tail
  follow(s.buf)
end

--- Append streamed text (it may hold newlines) to the last line, continuing a text block.
---@param s table
---@param text string
---@param kind string 'text' or 'thinking'
function M.stream(s, text, kind)
  M.buffer(s)
  local prefix = kind == 'thinking' and M.BODY or ''
  if s.tail ~= kind then
    if kind == 'thinking' then
      M.append(s, { M.HEADER .. 'thinking', prefix }, kind)
    else
      M.append(s, { '' }, kind)
    end
  end
  local parts = vim.split(text, '\n', { plain = true })
  local count = vim.api.nvim_buf_line_count(s.buf)
  local last = vim.api.nvim_buf_get_lines(s.buf, count - 1, count, false)[1] or ''
  local lines = { last .. parts[1] }
  for i = 2, #parts do
    table.insert(lines, prefix .. parts[i])
  end
  M.set_lines(s, count - 1, count, lines)
  s.tail = kind
  follow(s.buf)
end

--- Start a block (a tool call): a header line and an end mark that body lines go before.
---@param s table
---@param key string
---@param header string
function M.block(s, key, header)
  M.append(s, { M.HEADER .. header }, nil)
  local row = vim.api.nvim_buf_line_count(s.buf) - 1
  s.blocks[key] = {
    header = vim.api.nvim_buf_set_extmark(s.buf, ns, row, 0, { right_gravity = false }),
    last = vim.api.nvim_buf_set_extmark(s.buf, ns, row, 0, { right_gravity = false }),
  }
end

--- Add body lines to a block (after its last line, wherever the buffer has got to).
---@param s table
---@param key string
---@param lines string[]
function M.block_body(s, key, lines)
  local b = s.blocks[key]
  if not b then
    return M.append(s, vim.tbl_map(function(l) return M.BODY .. l end, lines), nil)
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(s.buf, ns, b.last, {})[1]
  local body = vim.tbl_map(function(l) return M.BODY .. l end, lines)
  M.set_lines(s, row + 1, row + 1, body)
  b.last = vim.api.nvim_buf_set_extmark(s.buf, ns, row + #body, 0, { id = b.last })
  if row + #body == vim.api.nvim_buf_line_count(s.buf) - 1 then
    s.tail = nil
  end
  follow(s.buf)
end

--- Rewrite a block's header line.
---@param s table
---@param key string
---@param header string
function M.block_header(s, key, header)
  local b = s.blocks[key]
  if not b then
    return
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(s.buf, ns, b.header, {})[1]
  -- The line's text is replaced in place (nvim_buf_set_text): replacing the whole line
  -- (nvim_buf_set_lines) pushed the block's marks onto the next line, so the next rewrite
  -- overwrote the "input:" line and left this header stale.
  local old = vim.api.nvim_buf_get_lines(s.buf, row, row + 1, false)[1] or ''
  vim.bo[s.buf].modifiable = true
  vim.api.nvim_buf_set_text(s.buf, row, 0, row, #old, { M.HEADER .. header })
  vim.bo[s.buf].modifiable = false
end

--- The buffer's lines (for tests and the screenshot).
---@param s table
---@return string[]
function M.lines(s)
  return vim.api.nvim_buf_get_lines(M.buffer(s), 0, -1, false)
end

return M
