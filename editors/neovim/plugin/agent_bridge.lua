-- agent-bridge for Neovim (>= 0.10): the :AgentBridge command. See :help agent-bridge.
if vim.g.loaded_agent_bridge then
  return
end
vim.g.loaded_agent_bridge = true

vim.api.nvim_create_user_command('AgentBridge', function(opts)
  require('agent_bridge').command(opts)
end, {
  nargs = '*',
  range = true,
  complete = function(arglead, cmdline)
    return require('agent_bridge').complete(arglead, cmdline)
  end,
  desc = 'agent-bridge: sessions with AI coding agents',
})

vim.api.nvim_create_autocmd('VimLeavePre', {
  group = vim.api.nvim_create_augroup('agent_bridge', { clear = true }),
  callback = function()
    local ab = package.loaded['agent_bridge']
    if ab and ab.state.client and not ab.state.client.exited then
      ab.state.client.stopping = true
      ab.state.client:notify('exit', nil)
    end
  end,
})
