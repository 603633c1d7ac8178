-- What the Neovim scenarios share, loaded by each with dofile from beside it:
--   local harness = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua'
--   local h = dofile(harness)({})
-- The plugin on the runtime path and set up against the real bridge (AB_PLUGIN,
-- AB_BRIDGE, AB_STATE); `h.outcome`, written to AB_OUT as JSON by `h.run`; keys typed as
-- a user types them; a chat's lines counted; a wait that names what it waited for (in
-- `outcome.steps`) and fails with the current chat's lines; the blocks a scripted run
-- received; the outcome saved, or a failure saved and raised. Options: `outcome` (the
-- table to start from), `wait_ms` (a wait's budget, 20 s unless given), `stop_bridge`
-- (stop the bridge, up to 10 s, before quitting), `setup` (false: the scenario calls
-- `setup` itself).
return function(opts)
  local out_path = assert(os.getenv('AB_OUT'))
  local h = { outcome = opts.outcome or {} }
  h.outcome.steps = h.outcome.steps or {}
  vim.opt.rtp:prepend(assert(os.getenv('AB_PLUGIN')))
  vim.cmd('runtime plugin/agent_bridge.lua')
  h.ab = require('agent_bridge')
  h.chat = require('agent_bridge.chat')
  if opts.setup ~= false then
    h.ab.setup({ cmd = { os.getenv('AB_BRIDGE') }, state_dir = os.getenv('AB_STATE') })
  end

  --- Write the outcome (JSON) to AB_OUT now.
  function h.save()
    local f = assert(io.open(out_path, 'w'))
    f:write(vim.json.encode(h.outcome))
    f:close()
  end

  --- Save the outcome with `msg` as its error, then raise `msg`.
  function h.fail(msg)
    h.outcome.error = msg
    h.save()
    error(msg, 0)
  end

  --- The current session's chat, as lines (none without a session).
  function h.lines()
    local s = h.ab.current()
    return s and h.chat.lines(s) or {}
  end

  --- Type `keys` (with <Key> notation) as the user would, and let Neovim act on them.
  function h.type_keys(keys)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt', false)
  end

  --- How many of session `s`'s chat lines are exactly `text`.
  function h.count(s, text)
    local n = 0
    for _, l in ipairs(h.chat.lines(s)) do
      if l == text then
        n = n + 1
      end
    end
    return n
  end

  --- Wait until `pred()`; on time-out, an error naming `what` with the current chat.
  function h.wait_for(what, pred)
    if not vim.wait(opts.wait_ms or 20000, pred, 20) then
      error('timed out waiting for ' .. what .. ': ' .. table.concat(h.chat.lines(h.ab.current()), '\n'), 0)
    end
    table.insert(h.outcome.steps, what)
  end

  --- The blocks the provider received in session `s`'s last run (the scripted
  --- provider's `received` step answers with them as one JSON line).
  function h.received(s)
    local lines = h.chat.lines(s)
    for i = #lines, 1, -1 do
      if lines[i]:sub(1, 2) == '[{' then
        return vim.json.decode(lines[i])
      end
    end
  end

  --- Run the scenario's `body`, write the outcome (`ok`, or the `error`) and quit Neovim
  --- (an error exit when the body failed).
  function h.run(body)
    local ok, err = pcall(body)
    h.outcome.ok = ok
    h.outcome.error = not ok and tostring(err) or nil
    h.save()
    if opts.stop_bridge then
      local stopped = false
      h.ab.stop(function() stopped = true end)
      vim.wait(10000, function() return stopped end, 20)
    end
    vim.cmd(ok and 'qall!' or 'cquit!')
  end

  return h
end
