-- A provider's own sessions, in a real headless Neovim against the real bridge:
-- :AgentBridge native lists Claude Code's sessions (CLAUDE_CONFIG_DIR holds one the real
-- CLI wrote), the one picked opens read-only with its history; with AB_CONTINUE, `c`
-- there continues it in a chat and a prompt is answered in that conversation.
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_OUT (and CLAUDE_CONFIG_DIR for the bridge).
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({ stop_bridge = true })
local ab, chat, outcome = h.ab, h.chat, h.outcome
vim.notify = function(msg) outcome.note = msg end
vim.ui.select = function(items, opts, on_choice)
  outcome.picker = { prompt = opts.prompt, labels = vim.tbl_map(opts.format_item, items) }
  vim.schedule(function() on_choice(items[1], 1) end)
end
h.run(function()
  vim.cmd('AgentBridge native')
  assert(vim.wait(20000, function()
    return vim.api.nvim_buf_get_name(0):find('agent-bridge://native/', 1, true) ~= nil
  end, 20), 'no native session buffer; note: ' .. tostring(outcome.note))
  outcome.name = vim.api.nvim_buf_get_name(0)
  outcome.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  outcome.modifiable = vim.bo.modifiable
  if os.getenv('AB_CONTINUE') then
    -- `c`: continued in a chat; the next prompt goes on in the provider's conversation
    local native_buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_feedkeys('c', 'xt', false)
    assert(vim.wait(60000, function()
      local s = ab.current()
      return s ~= nil and vim.api.nvim_get_current_buf() ~= native_buf
        and vim.tbl_contains(chat.lines(s), 'Noted: pelican.')
    end, 20), 'not continued; note: ' .. tostring(outcome.note))
    local s = ab.current()
    outcome.continued_provider = s.provider
    ab.prompt('what was the word?')
    assert(vim.wait(60000, function()
      return vim.tbl_contains(chat.lines(s), '✓ done (end_turn)')
    end, 20), 'no reply: ' .. table.concat(chat.lines(s), '\n'))
    outcome.chat = chat.lines(s)
  end
end)
