-- :checkhealth agent_bridge in a real headless Neovim; the report buffer's lines go to
-- AB_OUT (JSON). Env: AB_PLUGIN, AB_BRIDGE (may name nothing), AB_STATE, AB_OUT.
vim.opt.rtp:prepend(assert(os.getenv('AB_PLUGIN')))
vim.cmd('runtime plugin/agent_bridge.lua')
require('agent_bridge').setup({ cmd = { os.getenv('AB_BRIDGE') }, state_dir = os.getenv('AB_STATE') })
vim.cmd('checkhealth agent_bridge')
local f = assert(io.open(assert(os.getenv('AB_OUT')), 'w'))
f:write(vim.json.encode(vim.api.nvim_buf_get_lines(0, 0, -1, false)))
f:close()
vim.cmd('qall!')
