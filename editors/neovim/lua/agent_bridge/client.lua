--- The connection to one `agent-bridge serve` child: spawned and framed by Neovim's own
--- JSON-RPC client (vim.lsp.rpc, Content-Length framing), every message kept in a traffic
--- log. All callbacks run in the main loop (scheduled), in the order the bridge sent.
local M = {}

---@class AgentBridgeClient
---@field rpc table vim.lsp.rpc.PublicClient
---@field log string[] the traffic log, newest last
---@field argv string[]
---@field exited boolean
---@field init_result table|nil
local Client = {}
Client.__index = Client

M.LOG_LIMIT = 5000

--- How to get agent-bridge before its first release (the README's Install section).
M.INSTALL_STEP = 'agent-bridge is not on PyPI yet: install it from a clone '
  .. '(pipx install /path/to/agent-bridge, or uv tool install /path/to/agent-bridge), '
  .. 'or set cmd in require("agent_bridge").setup{} to a clone\'s .venv/bin/agent-bridge '
  .. '(made by bash scripts/setup.sh)'

--- The command that runs the bridge: `cmd` from the configuration, else `agent-bridge` on
--- PATH. Returns the argv prefix, or nil and the next step. (No `uvx agent-bridge`
--- fallback: agent-bridge is not on PyPI yet, so it would only fail in uv's resolver.)
---@param cfg table
---@return string[]|nil, string|nil
function M.resolve_cmd(cfg)
  local cmd = cfg.cmd
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  if cmd and #cmd > 0 then
    if vim.fn.executable(cmd[1]) == 1 then
      return cmd
    end
    return nil,
      ('the bridge command %q was not found: fix cmd in require("agent_bridge").setup{}; '):format(cmd[1])
        .. M.INSTALL_STEP
  end
  if vim.fn.executable('agent-bridge') == 1 then
    return { 'agent-bridge' }
  end
  return nil, 'agent-bridge was not found on PATH: ' .. M.INSTALL_STEP
end

--- One line of the traffic log.
---@param dir string '>' host to bridge, '<' bridge to host, '!' local
---@param what string
---@param payload any
function Client:_log(dir, what, payload)
  local ok, text = pcall(vim.json.encode, payload)
  local line = ('%s %s %s'):format(dir, what, ok and text or tostring(payload))
  table.insert(self.log, line)
  if #self.log > M.LOG_LIMIT then
    table.remove(self.log, 1)
  end
  if self.on_log then
    self.on_log(line)
  end
end

--- Spawn the bridge and open the protocol. `handlers` has notification(method, params),
--- request(method, params, id) (may yield: it runs in a coroutine; returns result, err),
--- cancel(id) ($/cancelRequest from the bridge) and exit(code, signal).
--- Returns the client, or nil and the message to show (with the next step).
---@param cfg table
---@param handlers table
---@return AgentBridgeClient|nil, string|nil
function M.start(cfg, handlers)
  local cmd, why = M.resolve_cmd(cfg)
  if not cmd then
    return nil, why
  end
  local argv = vim.list_extend(vim.deepcopy(cmd), { cfg.subcommand or 'serve' })
  if cfg.state_dir then
    vim.list_extend(argv, { '--state-dir', cfg.state_dir })
  end
  vim.list_extend(argv, cfg.args or {})
  local self = setmetatable({ log = {}, argv = argv, exited = false }, Client)
  local dispatchers = {
    notification = function(method, params)
      if method == '$/cancelRequest' then
        self:_log('<', method, params)
        handlers.cancel(params and params.id)
        return
      end
      if method ~= 'event' or cfg.log_events ~= false then
        self:_log('<', method, params)
      end
      handlers.notification(method, params)
    end,
    server_request = function(method, params)
      self:_log('<', method .. ' (request)', params)
      local result, err = handlers.request(method, params)
      self:_log('>', method .. ' (reply)', result or err)
      return result, err
    end,
    on_exit = vim.schedule_wrap(function(code, signal)
      self.exited = true
      self:_log('!', 'exit', { code = code, signal = signal })
      handlers.exit(code, signal)
    end),
    on_error = function(code, err)
      self:_log('!', 'rpc error ' .. tostring(code), tostring(err))
    end,
  }
  local ok, rpc = pcall(vim.lsp.rpc.start, argv, dispatchers, { env = cfg.env, cwd = cfg.cwd })
  if not ok then
    return nil, ('could not start %s: %s'):format(argv[1], tostring(rpc))
  end
  self.rpc = rpc
  self:_log('!', 'spawned', argv)
  return self
end

--- Send a request; `callback(err, result)` runs in the main loop.
---@param method string
---@param params table|nil
---@param callback fun(err: table|nil, result: any)|nil
---@return boolean sent
function Client:request(method, params, callback)
  self:_log('>', method, params)
  if self.exited or self.rpc.is_closing() then
    local err = { code = -32099, message = 'the bridge is not running', data = { code = 'bridge_not_running' } }
    if callback then
      vim.schedule(function()
        callback(err, nil)
      end)
    end
    return false
  end
  local ok = self.rpc.request(method, params, function(err, result)
    vim.schedule(function()
      self:_log('<', method .. ' (reply)', err and { error = err } or result)
      if callback then
        callback(err, result)
      end
    end)
  end)
  return ok
end

--- Send a notification.
---@param method string
---@param params table|nil
function Client:notify(method, params)
  self:_log('>', method, params)
  if not self.exited and not self.rpc.is_closing() then
    self.rpc.notify(method, params)
  end
end

--- Ask the bridge to shut down and exit (the sessions are closed and kept in the journal);
--- `done()` runs once the process is gone (or after 5 s, when it is terminated).
---@param done fun()|nil
function Client:stop(done)
  local function finish()
    if done then
      done()
      done = nil
    end
  end
  if self.exited then
    return finish()
  end
  self:request('shutdown', nil, function()
    self:notify('exit', nil)
  end)
  vim.defer_fn(function()
    if not self.exited then
      self.rpc.terminate()
    end
  end, 5000)
  local function poll()
    if self.exited then
      return finish()
    end
    vim.defer_fn(poll, 20)
  end
  poll()
end

return M
