--- The chat buffer of one session: the run's events rendered as they stream. Thinking and
--- tool calls are blocks whose header starts with "▸ " and whose body lines start with
--- "  │ "; the window folds them (closed) by 'foldexpr'.
local M = {}
local insert_in

local ns = vim.api.nvim_create_namespace('agent_bridge_chat')
M.ns = ns

M.HEADER = '▸ '
M.BODY = '  │ '

--- 'foldexpr' of a chat window: a block header opens a fold, its body stays in it.
--- The chat buffer `buf` is named: Neovim may evaluate it for a change made to the buffer
--- while another one is current, where getline() reads the wrong buffer.
---@param lnum integer
---@param buf integer|nil
---@return string
function M.foldexpr(lnum, buf)
  local line = (buf and vim.api.nvim_buf_is_valid(buf))
      and (vim.api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1] or '')
    or vim.fn.getline(lnum)
  -- a block nested in another (a subagent's tool call) is one body prefix deeper
  local depth, at = 0, 1
  while line:sub(at, at + #M.BODY - 1) == M.BODY do
    depth, at = depth + 1, at + #M.BODY
  end
  if line:sub(at, at + #M.HEADER - 1) == M.HEADER then
    return '>' .. (depth + 1)
  end
  return tostring(depth)
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
  wo.foldexpr = ("v:lua.require'agent_bridge.chat'.foldexpr(v:lnum, %d)"):format(buf)
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

--- Compute the folds of the windows showing `s` again, keeping each block open or closed
--- as it was: in a chat with nested blocks, Neovim 0.11's incremental fold update after
--- lines were inserted above the end left some lines of a nested block at level 0 (only
--- computing them all again, 'foldmethod' reset, puts them right).
---@param s table
function M.refold(s)
  if not s.nested or not (s.buf and vim.api.nvim_buf_is_valid(s.buf)) then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(s.buf)) do
    vim.api.nvim_win_call(win, function()
      local open = {}
      for _, b in pairs(s.blocks) do
        local row = vim.api.nvim_buf_get_extmark_by_id(s.buf, ns, b.header, {})[1]
        if row and vim.fn.foldclosed(row + 1) == -1 and vim.fn.foldlevel(row + 1) > 0 then
          table.insert(open, row + 1)
        end
      end
      table.sort(open)
      local view = vim.fn.winsaveview()
      vim.wo[win].foldmethod = 'manual'
      vim.wo[win].foldmethod = 'expr'
      for _, lnum in ipairs(open) do
        vim.cmd(('silent! %dfoldopen'):format(lnum))
      end
      vim.fn.winrestview(view)
    end)
  end
end

--- Insert `lines` after the last line of block `key`; the blocks it ends (itself and
--- the blocks it is nested in, when it is their last line) now end after them. Returns
--- the row of the first line inserted (0-based).
---@return integer
insert_in = function(s, key, lines)
  local b = s.blocks[key]
  local row = vim.api.nvim_buf_get_extmark_by_id(s.buf, ns, b.last, {})[1]
  M.set_lines(s, row + 1, row + 1, lines)
  local k = key
  while k and s.blocks[k] do
    local blk = s.blocks[k]
    if vim.api.nvim_buf_get_extmark_by_id(s.buf, ns, blk.last, {})[1] ~= row then
      break
    end
    blk.last = vim.api.nvim_buf_set_extmark(s.buf, ns, row + #lines, 0, { id = blk.last })
    k = blk.parent
  end
  if row + #lines == vim.api.nvim_buf_line_count(s.buf) - 1 then
    s.tail = nil
  else
    M.refold(s)
  end
  follow(s.buf)
  return row + 1
end

--- Start a block (a tool call): a header line and an end mark that body lines go before.
---@param s table
---@param key string
---@param header string
---@param parent string|nil the key of the block it is nested in (a subagent's call)
function M.block(s, key, header, parent)
  local p = parent and s.blocks[parent]
  if not p then
    M.append(s, { M.HEADER .. header }, nil)
    local row = vim.api.nvim_buf_line_count(s.buf) - 1
    s.blocks[key] = {
      depth = 0,
      header = vim.api.nvim_buf_set_extmark(s.buf, ns, row, 0, { right_gravity = false }),
      last = vim.api.nvim_buf_set_extmark(s.buf, ns, row, 0, { right_gravity = false }),
    }
    return
  end
  local depth = p.depth + 1
  s.nested = true
  local row = insert_in(s, parent, { M.BODY:rep(depth) .. M.HEADER .. header })
  s.blocks[key] = {
    depth = depth,
    parent = parent,
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
  local prefix = M.BODY:rep(b.depth + 1)
  insert_in(s, key, vim.tbl_map(function(l) return prefix .. l end, lines))
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
  vim.api.nvim_buf_set_text(s.buf, row, 0, row, #old, { M.BODY:rep(b.depth or 0) .. M.HEADER .. header })
  vim.bo[s.buf].modifiable = false
end

--- The buffer's lines (for tests and the screenshot).
---@param s table
---@return string[]
function M.lines(s)
  return vim.api.nvim_buf_get_lines(M.buffer(s), 0, -1, false)
end

return M
