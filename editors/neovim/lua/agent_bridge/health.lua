--- :checkhealth agent_bridge — is the plugin usable here: Neovim's version, the bridge
--- command, its version, and what `agent-bridge doctor` says of each provider and of the
--- state directory (the same probe the CLI runs; no network but loopback).
local M = {}

local function run(argv, timeout_ms)
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return nil, tostring(proc)
  end
  local r = proc:wait(timeout_ms)
  if r.signal ~= 0 and r.code ~= 0 and r.stdout == '' then
    return nil, 'did not finish in ' .. (timeout_ms / 1000) .. ' s'
  end
  return r
end

function M.check()
  local health = vim.health
  local ab = require('agent_bridge')
  local client = require('agent_bridge.client')
  health.start('agent-bridge')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or later is needed', { 'upgrade Neovim' })
  end
  local cmd, why = client.resolve_cmd(ab.config)
  if not cmd then
    health.error(why or 'the bridge command was not found')
    return
  end
  health.ok('the bridge command: ' .. table.concat(cmd, ' '))
  if ab.config.subcommand == 'connect' or cmd[1] == 'ssh' then
    health.info('the bridge runs elsewhere (subcommand ' .. tostring(ab.config.subcommand) .. '): not probed')
    return
  end
  local v, err = run(vim.list_extend(vim.deepcopy(cmd), { '--version' }), 15000)
  if not v or v.code ~= 0 then
    health.error('`' .. table.concat(cmd, ' ') .. ' --version` failed: ' .. (err or vim.trim(v.stderr or '')),
      { 'reinstall agent-bridge, or fix cmd in require("agent_bridge").setup{}' })
    return
  end
  health.ok(vim.trim(v.stdout))
  local argv = vim.list_extend(vim.deepcopy(cmd), { 'doctor', '--json' })
  if ab.config.state_dir then
    vim.list_extend(argv, { '--state-dir', ab.config.state_dir })
  end
  local d, derr = run(argv, 60000)
  local okj, report = pcall(vim.json.decode, d and d.stdout or '')
  if not okj or type(report) ~= 'table' then
    health.warn('`agent-bridge doctor --json` gave no report: ' .. (derr or vim.trim(d and d.stderr or '')))
    return
  end
  local usable = 0
  for _, p in ipairs(report.providers or {}) do
    local label = ('%s (%s)'):format(p.name or p.id, p.id)
    if p.status == 'available' then
      usable = usable + 1
      health.ok(label .. ': available' .. (p.version and (' ' .. p.version) or ''))
    elseif p.status == 'unknown' then
      health.info(label .. ': ' .. (p.reason or 'unknown'))
    else
      health.warn(label .. ': ' .. p.status .. (p.reason and (': ' .. p.reason) or ''),
        p.nextStep and { p.nextStep } or nil)
    end
  end
  if usable == 0 then
    health.error('no provider is usable', { 'install one of the providers above' })
  end
  local j = report.journal or {}
  if j.status == 'ok' or j.status == nil then
    health.ok(('state directory %s, journal %s'):format(tostring(report.stateDir), tostring(j.path)))
  elseif j.status == 'absent' then
    health.ok(('state directory %s: %s'):format(tostring(report.stateDir), j.reason or 'no journal yet'))
  else
    health.error(('state directory %s: journal %s%s'):format(tostring(report.stateDir), tostring(j.status),
      j.reason and (': ' .. j.reason) or ''))
  end
end

return M
