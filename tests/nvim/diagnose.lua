-- Drive the rootrank language server from Neovim's built-in LSP client, headless, and
-- print what it received (diagnostics, the hover and the code actions on the root cause) as
-- one JSON line on stdout. Works with Neovim 0.7 (Debian 12) and later. Run:
--   ROOTRANK_LOG=path/to/run.log [ROOTRANK_PYTHON=python3] [ROOTRANK_SIGNATURES=dir] \
--   [ROOTRANK_ROOT=workspace] [ROOTRANK_CLIENT_COMMANDS=id,id] \
--     nvim --headless -u NONE -c "luafile tests/nvim/diagnose.lua"
local log = assert(os.getenv("ROOTRANK_LOG"), "set ROOTRANK_LOG")
local python = os.getenv("ROOTRANK_PYTHON") or "python3"
local folders = {}
if os.getenv("ROOTRANK_SIGNATURES") then
  folders = { os.getenv("ROOTRANK_SIGNATURES") }
end
local client_commands = vim.split(os.getenv("ROOTRANK_CLIENT_COMMANDS") or "", ",", { trimempty = true })

vim.cmd("edit " .. vim.fn.fnameescape(log))
local buf = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = "rootrank",
  cmd = { python, "-m", "rootrank.server" },
  root_dir = os.getenv("ROOTRANK_ROOT") or vim.fn.fnamemodify(log, ":p:h"),
  init_options = { signatureFolders = folders, clientCommands = client_commands },
})
vim.lsp.buf_attach_client(buf, client_id)

local received = vim.wait(120000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)

local out = { received = received, diagnostics = {}, hover = vim.NIL, actions = {} }
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local lsp = (d.user_data and d.user_data.lsp) or {}
  table.insert(out.diagnostics, {
    line = d.lnum,
    col = d.col,
    end_col = d.end_col,
    severity = d.severity,
    source = d.source or lsp.source,
    code = d.code or lsp.code,
    message = d.message,
  })
end

if received then
  local first = vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR })[1]
  if first then
    local replies = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = first.lnum, character = first.col },
    }, 10000)
    for _, reply in pairs(replies or {}) do
      if reply.result and reply.result.contents then
        out.hover = reply.result.contents.value
      end
    end
    -- What :lua vim.lsp.buf.code_action() would list on the root cause's diagnostic, sent
    -- back in LSP form as Neovim does (vim.lsp.diagnostic's diagnostic_vim_to_lsp).
    local from_lsp = (first.user_data and first.user_data.lsp) or {}
    local lsp_diagnostic = vim.tbl_extend("keep", {
      range = {
        start = { line = first.lnum, character = first.col },
        ["end"] = { line = first.end_lnum, character = first.end_col },
      },
      severity = first.severity,
      message = first.message,
      source = first.source,
      code = first.code,
    }, from_lsp)
    local actions = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      range = lsp_diagnostic.range,
      context = { diagnostics = { lsp_diagnostic } },
    }, 30000)
    for _, reply in pairs(actions or {}) do
      for _, action in ipairs(reply.result or {}) do
        local command = action.command
        if type(command) == "table" then
          command = command.command
        end
        table.insert(out.actions, { title = action.title, command = command or vim.NIL, edit = action.edit ~= nil })
      end
    end
  end
end

io.stdout:write(vim.fn.json_encode(out) .. "\n")
vim.lsp.stop_client(client_id)
vim.cmd("qall!")
