--- Asking the user: approvals offer the request's modes through vim.ui.select, questions
--- their choices (or vim.ui.input for free text), question sets one item after another.
--- Each `ask_*` calls `done(answer)` with the wire answer, or `done(nil)` when dismissed.
local M = {}

--- The choices of an approval prompt, from the modes the request offers.
---@param request table
---@return table[] items {label, answer}
function M.approval_items(request)
  local modes = request.modes or { 'once' }
  local items = {}
  for _, mode in ipairs(modes) do
    if mode == 'once' then
      table.insert(items, { label = 'Allow once', answer = { kind = 'approval', decision = 'allow', mode = 'once' } })
    elseif mode == 'session' then
      table.insert(items, {
        label = 'Allow for this session',
        answer = { kind = 'approval', decision = 'allow', mode = 'session' },
      })
    end
  end
  table.insert(items, { label = 'Deny', answer = { kind = 'approval', decision = 'deny' } })
  return items
end

--- A one-line description of an approval request.
---@param request table
---@return string
function M.describe(request)
  if request.kind == 'approval' then
    local what = request.title or request.action or 'approval'
    if request.command and not what:find(request.command, 1, true) then
      what = what .. ' — ' .. request.command
    end
    return what
  elseif request.kind == 'question' then
    return request.prompt or 'question'
  end
  return request.title or 'questions'
end

---@param request table
---@param done fun(answer: table|nil)
function M.ask_approval(request, done)
  local items = M.approval_items(request)
  vim.ui.select(items, {
    prompt = 'agent-bridge approval: ' .. M.describe(request),
    kind = 'agent_bridge.approval',
    format_item = function(item)
      return item.label
    end,
  }, function(item)
    done(item and item.answer or nil)
  end)
end

--- Ask one question (`prompt`, `choices`, `allowFreeText`); `done(choice_id|nil, text|nil)`.
local function ask_one(q, title, done)
  local choices = q.choices or {}
  if #choices == 0 then
    vim.ui.input({ prompt = title .. (q.prompt or '') .. ' ' }, function(text)
      done(nil, text)
    end)
    return
  end
  local items = vim.deepcopy(choices)
  if q.allowFreeText then
    table.insert(items, { id = vim.NIL, label = 'Other (type an answer)…' })
  end
  vim.ui.select(items, {
    prompt = title .. (q.prompt or ''),
    kind = 'agent_bridge.question',
    format_item = function(item)
      return item.label or item.id
    end,
  }, function(item)
    if item == nil then
      return done(nil, nil)
    end
    if item.id == vim.NIL then
      vim.ui.input({ prompt = (q.prompt or '') .. ' ' }, function(text)
        done(nil, text)
      end)
      return
    end
    done(item.id, nil)
  end)
end

---@param request table
---@param done fun(answer: table|nil)
function M.ask_question(request, done)
  ask_one(request, 'agent-bridge question: ', function(choice, text)
    if choice then
      done({ kind = 'question', choice = choice })
    elseif text then
      done({ kind = 'question', text = text })
    else
      done(nil)
    end
  end)
end

---@param request table
---@param done fun(answer: table|nil)
function M.ask_question_set(request, done)
  local answers = {}
  local items = request.items or {}
  local function step(i)
    if i > #items then
      return done({ kind = 'questionSet', answers = answers })
    end
    local item = items[i]
    ask_one(item, ('agent-bridge %s (%d/%d): '):format(request.title or 'questions', i, #items), function(choice, text)
      local value = choice or text
      if value == nil then
        return done(nil)
      end
      answers[item.key] = value
      step(i + 1)
    end)
  end
  step(1)
end

--- Ask whatever `request` asks.
---@param request table
---@param done fun(answer: table|nil)
function M.ask(request, done)
  if request.kind == 'approval' then
    M.ask_approval(request, done)
  elseif request.kind == 'question' then
    M.ask_question(request, done)
  elseif request.kind == 'questionSet' then
    M.ask_question_set(request, done)
  else
    done(nil)
  end
end

--- A short text for an answer (in the chat buffer).
---@param answer table|nil
---@return string
function M.summary(answer)
  if type(answer) ~= 'table' then
    return ''
  end
  if answer.kind == 'approval' then
    -- An allow without a mode is allowed once (the protocol's default): say so.
    local mode = answer.mode or (answer.decision == 'allow' and 'once' or nil)
    return answer.decision .. (mode and (' (' .. mode .. ')') or '')
  elseif answer.kind == 'question' then
    return answer.choice or answer.text or ''
  elseif answer.kind == 'questionSet' then
    local parts = {}
    for k, v in pairs(answer.answers or {}) do
      table.insert(parts, k .. '=' .. tostring(v))
    end
    table.sort(parts)
    return table.concat(parts, ', ')
  end
  return ''
end

return M
