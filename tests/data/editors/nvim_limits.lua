-- Limits in a real headless Neovim against the real bridge: limits.updated meters shown
-- in the chat's bar (percent, status, reset time; a later update replaces only the
-- meters it names), and a run that hits a limit says its cause and when it resets; a
-- new session of the provider shows the bridge's latest figures (provider/limits).
-- Env: AB_PLUGIN, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.
local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
local h = dofile(harness)({})
local ab, chat, outcome = h.ab, h.chat, h.outcome
local function ended(s, n)
  local k = 0
  for _, l in ipairs(chat.lines(s)) do
    if l:sub(1, 3) == '✓' or l:sub(1, 3) == '✗' then
      k = k + 1
    end
  end
  return k >= n
end
h.run(function()
  vim.cmd('AgentBridge new scripted scriptFile=' .. os.getenv('AB_SCRIPT') .. ' title=Limits')
  assert(vim.wait(20000, function() return ab.current() ~= nil end, 20), 'no session')
  local s = ab.current()
  local chat_win = vim.fn.bufwinid(s.buf)
  local function bar()
    return vim.api.nvim_eval_statusline(vim.wo[chat_win].winbar, { winid = chat_win, use_winbar = true }).str
  end
  outcome.bar_before = bar()
  vim.cmd('AgentBridge prompt Go')
  assert(vim.wait(20000, function() return ended(s, 1) end, 20), 'run 1 did not end')
  outcome.bar1 = bar()
  vim.cmd('AgentBridge prompt Again')
  assert(vim.wait(20000, function() return ended(s, 2) end, 20), 'run 2 did not end')
  outcome.bar2 = bar()
  outcome.session = s.id
  outcome.lines = chat.lines(s)
  -- a new session of the same provider, in an editor that knows nothing of them yet:
  -- its bar shows the bridge's latest figures (provider/limits)
  ab.state.limits = {}
  vim.cmd('AgentBridge new scripted title=Second')
  assert(vim.wait(20000, function() return ab.current() ~= s end, 20), 'no second session')
  local s2 = ab.current()
  local win2 = vim.fn.bufwinid(s2.buf)
  local function bar2()
    return vim.api.nvim_eval_statusline(vim.wo[win2].winbar, { winid = win2, use_winbar = true }).str
  end
  vim.wait(20000, function() return bar2():find('limits:', 1, true) ~= nil end, 20)
  outcome.bar3 = bar2()
end)
