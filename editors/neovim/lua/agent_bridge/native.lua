--- A provider's own sessions (made in its CLI or app, outside the bridge): listed with
--- `provider/sessions/list`, one picked and its history read with `provider/sessions/read`
--- into a read-only buffer, rendered like a chat, where `c` continues it in a chat of the
--- bridge (`provider/sessions/continue`) when the provider can.
local M = {}

--- The lines a native session's records show: each record's events (a run's input as
--- "## You", text and thinking as they read, tool calls as "▸ " headers).
---@param records table[] NativeRecord
---@return string[]
function M.render(records)
  local lines = {}
  local text = nil -- the text being accumulated ('' at a line start)
  local function flush()
    if text then
      vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
      text = nil
    end
  end
  for _, r in ipairs(records) do
    for _, e in ipairs(r.events or {}) do
      if e.type == 'run.started' then
        flush()
        local input = type(e.input) == 'string' and e.input or vim.inspect(e.input)
        table.insert(lines, '')
        table.insert(lines, '## You')
        vim.list_extend(lines, vim.split(input, '\n', { plain = true }))
        table.insert(lines, '')
        table.insert(lines, '## Agent')
      elseif e.type == 'text.delta' then
        text = (text or '') .. (e.text or '')
      elseif e.type == 'thinking.delta' then
        flush()
        table.insert(lines, '▸ thinking')
        for _, l in ipairs(vim.split(e.text or '', '\n', { plain = true })) do
          table.insert(lines, '  │ ' .. l)
        end
      elseif e.type == 'tool.activity' then
        flush()
        table.insert(lines, ('▸ tool %s: %s [%s]'):format(e.name or '?', e.title or e.toolCallId or '', e.status or ''))
      end
    end
  end
  flush()
  return lines
end

--- Show a native session in a read-only buffer (in the current window).
---@param provider table the provider's descriptor
---@param info table NativeSessionInfo
---@param records table[]
---@param continue fun()|nil continues the session in the bridge (`c` in the buffer)
---@return integer buf
function M.show(provider, info, records, continue)
  local name = 'agent-bridge://native/' .. provider.id .. '/' .. info.sessionRef
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'agentbridge'
  local head = ('# %s session · %s · %s'):format(provider.id, info.title or '(untitled)', info.workspace or '')
  local note = continue and ' (read-only: c continues it in a chat)' or ' (read-only)'
  local lines = { head .. note }
  vim.list_extend(lines, M.render(records))
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  if continue then
    vim.keymap.set('n', 'c', continue, { buffer = buf, nowait = true, desc = 'agent-bridge: continue this session in a chat' })
  end
  vim.api.nvim_win_set_buf(0, buf)
  return buf
end

--- The label of a native session in the picker.
function M.label(info)
  return ('%s · %s · %s'):format(info.title or '(untitled)', info.workspace or '?', info.updatedAt or info.createdAt or '')
end

return M
