;;; emacs_session.el --- agent-bridge.el driven through a whole session -*- lexical-binding: t; -*-

;; A whole scripted session driven through the package's own commands in a real
;; `emacs --batch' (ERT), against the real bridge.  `read-string' (the pickers'
;; free text) is stubbed to pick from `test-picks'; approvals and questions are answered
;; by keys typed into the chat buffer (`execute-kbd-macro' through the command loop):
;; nothing is asked on its own, keys typed elsewhere answer nothing, and a dismissed
;; prompt (q, C-g, ESC, another key) leaves the request pending.
;; Env: AB_PACKAGE (editors/emacs), AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
(setq test-wait-seconds 20)

(defvar test-picks nil "What the stubbed prompts answer, in order.")
(defvar test-asked nil "The prompts shown: (PROMPT CHOICE-NAMES PENDING-COUNT).")
(defvar test-keys-asked nil "The one-key prompts shown: (PROMPT PENDING-COUNT).")
(defconst test-read-key (symbol-function 'read-key))

(defun test-read-key (prompt &rest args)
  "Record PROMPT, then read the key as `read-key' does (ARGS)."
  (let ((s (agent-bridge--current-session)))
    (push (list prompt (if s (agent-bridge-pending-count s) 0)) test-keys-asked))
  (apply test-read-key prompt args))

(defun test-type (buffer keys)
  "Type KEYS (a `kbd' string) in BUFFER, shown in the selected window."
  (switch-to-buffer buffer)
  (execute-kbd-macro (kbd keys)))

(defun test-responded ()
  "How many answers the chat shows."
  (cl-count-if (lambda (l) (string-prefix-p "→ " l)) (test-lines)))

(defun test-read-string (prompt &rest _)
  "Answer PROMPT with the next of `test-picks'."
  (push (list prompt nil 0) test-asked)
  (pop test-picks))

(defun test-count (line)
  "How many lines of the chat are LINE."
  (cl-count line (test-lines) :test #'equal))

(ert-deftest agent-bridge-whole-session ()
  ;; the pickers one after another (the new session's menu is tested in step 8)
  (setq agent-bridge-use-transient nil)
  (cl-letf (((symbol-function 'read-key) #'test-read-key)
            ((symbol-function 'read-string) #'test-read-string))
    ;; 1. A bridge that is not there: a clear message with the next step.
    (let* ((agent-bridge-command '("/nonexistent/agent-bridge"))
           (err (should-error (agent-bridge-sessions) :type 'user-error)))
      (should (string-match-p "was not found" (cadr err)))
      (should (string-match-p "not on PyPI yet" (cadr err)))
      (should (string-match-p "pipx install /path/to/agent-bridge" (cadr err)))
      (should-not (string-match-p "pipx install agent-bridge" (cadr err))))
    ;; Nothing configured, no agent-bridge on `exec-path' but a uvx there: no `uvx
    ;; agent-bridge' (it does not resolve before a release), the step that works now.
    (let* ((bin (make-temp-file "ab-bin" t))
           (uvx (expand-file-name "uvx" bin)))
      (with-temp-file uvx (insert "#!/bin/sh\nexit 1\n"))
      (set-file-modes uvx #o755)
      (let* ((agent-bridge-command nil)
             (exec-path (list bin))
             (err (should-error (agent-bridge-sessions) :type 'user-error)))
        (should (string-match-p "not found on .exec-path." (cadr err)))
        (should (string-match-p "not on PyPI yet" (cadr err)))
        (should (string-match-p "\\.venv/bin/agent-bridge" (cadr err)))
        (should-not (string-match-p "uvx" (cadr err)))))
    (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
          agent-bridge-state-directory (getenv "AB_STATE")
          agent-bridge-environment '("PATH=/usr/bin:/bin"
                                     "AGENT_BRIDGE_CLAUDE_PATH=/nonexistent/claude"))
    ;; The pickers, where Claude Code is not installed: the provider (its label says it is
    ;; unavailable), the model (free text), the mode (the enum's values); the provider is
    ;; then refused with its next step.
    (let (collections messages)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (prompt collection &rest _)
                   (push (cons prompt (mapcar (lambda (c) (if (consp c) (car c) c)) collection))
                         collections)
                   (seq-find (lambda (c) (string-match-p "\\`claude-code\\|\\`plan\\'" c))
                             (mapcar (lambda (c) (if (consp c) (car c) c)) collection))))
                ((symbol-function 'agent-bridge--message)
                 (lambda (fmt &rest args) (push (apply #'format fmt args) messages))))
        (setq test-picks nil)
        (agent-bridge-new-session)
        (test-wait "the pickers" (lambda () messages))
        ;; Only the provider was asked: no model, mode or title for one that cannot run.
        (should (= 1 (length collections)))
        (should-not test-asked)
        (let ((provider (car collections)))
          (should (equal (car provider) "agent-bridge provider: "))
          (should (member "scripted" (cdr provider)))
          (should (seq-find (lambda (l) (string-prefix-p "claude-code — unavailable: the claude executable was not found" l))
                            (cdr provider))))
        (should (string-prefix-p "claude-code is not available: " (car messages)))
        (should (string-match-p "next step: install Claude Code" (car messages)))
        (setq test-asked nil)))
    ;; 2. A session on the scripted provider, from a source file's buffer, through the
    ;; pickers: the provider, then its other session options one at a time (the script
    ;; file; an empty answer ends), then the title.  The chat is shown before the bridge
    ;; answers: `p' typed at once (the first prompt) goes to the chat, not into the file.
    (let ((src (find-file-noselect (make-temp-file "ab-src" nil ".txt" "print('hi')\n")))
          (picks (list "scripted" "scriptFile" ""))
          collections)
      (switch-to-buffer src)
      (setq test-picks (list (getenv "AB_SCRIPT") "Fix-the-build" "Fix the build")
            test-asked nil)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (prompt collection &rest _)
                   (push (cons prompt (mapcar (lambda (c) (if (consp c) (car c) c)) collection))
                         collections)
                   (pop picks))))
        (agent-bridge-new-session)
        (test-wait "the title prompt" (lambda () (assoc "Title (optional): " test-asked)))
        ;; the chat is shown whether or not the session/create reply has been read yet
        ;; (usually not: the keys are typed ahead of it; on a loaded machine it may be)
        (should-not (eq (window-buffer (selected-window)) src))
        (execute-kbd-macro (kbd "p")))
      (should (equal (with-current-buffer src (buffer-string)) "print('hi')\n"))
      (should-not (buffer-modified-p src))
      (let ((more (assoc "More session options (empty: done): " (reverse collections))))
        (should (member "scriptFile" (cdr more)))
        (should (member "script" (cdr more))))
      (should (equal (mapcar #'car (reverse test-asked))
                     '("scriptFile (string): " "Title (optional): " "agent-bridge prompt: ")))
      (should-not picks))
    (test-wait "the session" (lambda () (agent-bridge--current-session)))
    (let* ((s (agent-bridge--current-session))
           (sid (agent-bridge--session-id s)))
      (should (eq (window-buffer (selected-window)) (agent-bridge--buffer s)))
      ;; 3. A run (its prompt typed above): streamed text and thinking, an approval, an
      ;; edit, a question.
      (test-wait "the approval" (lambda () (= 1 (agent-bridge-pending-count s))))
      ;; Nothing asks on its own (timers run here), and keys typed for something else
      ;; (in another buffer: the d of a command name, an o, an s) answer nothing.
      (accept-process-output nil 0.3)
      (should-not test-keys-asked)
      (test-type (get-buffer-create "*test elsewhere*") "d o s agent-bridge-sessions")
      (accept-process-output nil 0.3)
      (should (= 1 (agent-bridge-pending-count s)))
      ;; The chat shows the approval's answers as buttons under its line; keys typed in
      ;; the chat that are not a press of one (o, s) answer nothing either.
      (should (member "  [Allow once] [Allow for session] [Deny]" (test-lines)))
      (test-type (agent-bridge--buffer s) "o s")
      ;; nor a RET where the chat keeps point (its end, right after [Deny]): not a button
      (with-current-buffer (agent-bridge--buffer s)
        (should (= (point) (point-max)))
        (should-not (button-at (point))))
      (ignore-errors (test-type (agent-bridge--buffer s) "RET")) ; "Buffer is read-only"
      (accept-process-output nil 0.3)
      (should (= 1 (agent-bridge-pending-count s)))
      ;; `a' in the chat asks; q, C-g, ESC and an unrelated key dismiss: still pending.
      (dolist (keys '("a q" "a C-g" "a ESC" "a x"))
        (test-type (agent-bridge--buffer s) keys)
        (accept-process-output nil 0.2)
        (should (= 1 (agent-bridge-pending-count s)))
        (should (= 0 (test-responded))))
      (should (= 4 (length test-keys-asked)))
      (let ((prompt (car (car test-keys-asked))))
        (should (string-prefix-p "agent-bridge approval: Edit Makefile " prompt))
        (should (string-match-p "o allow once, s allow for session, d deny, C-g/q dismiss" prompt))
        (should (= 1 (nth 1 (car test-keys-asked)))))
      ;; The answer: `a' then `s' (allow for the session).
      (test-type (agent-bridge--buffer s) "a s")
      (test-wait "the question" (lambda () (member "? question: Run the tests too?" (test-lines))))
      (should (member "→ responded: allow (session)" (test-lines)))
      ;; Answered, its buttons are gone.
      (should-not (member "  [Allow once] [Allow for session] [Deny]" (test-lines)))
      ;; The question: RET on its line in the chat asks it (1 Yes, 2 No); C-g dismisses.
      (with-current-buffer (agent-bridge--buffer s)
        (switch-to-buffer (current-buffer))
        (goto-char (point-min))
        (search-forward "? question: ")
        (execute-kbd-macro (kbd "RET C-g")))
      (should (string-match-p "1 Yes, 2 No" (car (car test-keys-asked))))
      (accept-process-output nil 0.2)
      (should (= 1 (agent-bridge-pending-count s)))
      ;; Its choices are buttons too: RET on [Yes] answers it.
      (should (member "  [Yes] [No]" (test-lines)))
      (with-current-buffer (agent-bridge--buffer s)
        (goto-char (point-min))
        (search-forward "[Ye")
        (execute-kbd-macro (kbd "RET")))
      (test-wait "run 1" (lambda () (member "✓ done (end_turn)" (test-lines))))
      ;; Thinking and the tool call are folded: their bodies are invisible.
      (with-current-buffer (agent-bridge--buffer s)
        (goto-char (point-min))
        (search-forward "  │ Let me look at the build.")
        (should (invisible-p (match-beginning 0)))
        (search-forward "  │ edit Makefile")
        (should (invisible-p (match-beginning 0)))
        (search-backward "▸ tool Edit")
        ;; the folded call's header (rewritten from started to completed) stays shown
        (should-not (invisible-p (point)))
        (should-not (invisible-p (1- (line-end-position))))
        (agent-bridge-toggle-block)
        (search-forward "  │ edit Makefile")
        (should-not (invisible-p (match-beginning 0))))
      ;; The highlighting: face forms evaluate (no void-variable), the end line is `success'.
      (with-current-buffer (agent-bridge--buffer s)
        (font-lock-mode 1)
        (font-lock-ensure)
        (goto-char (point-min))
        (search-forward "✓ done")
        (should (eq (get-text-property (match-beginning 0) 'face) 'success)))
      ;; 4. The edit in diff-mode.
      (with-current-buffer (agent-bridge--buffer s)
        (with-current-buffer (agent-bridge-diff)
          (should (derived-mode-p 'diff-mode))
          ;; the header names the file, not the compared buffers or temporary files
          (should (string-prefix-p "# edit of Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ "
                                   (buffer-string)))
          (should-not (string-match-p "#<buffer\\|buffer-content\\|Diff finished\\|--label"
                                      (buffer-string)))
          (should (string-match-p "^-\tcc -o app main.c$" (buffer-string)))
          (should (string-match-p "^\\+\tcc -Wall -o app main.c$" (buffer-string)))))
      ;; 5. A run interrupted.
      (agent-bridge-prompt "Keep going")
      (test-wait "run 2 streaming" (lambda () (member "Working on it..." (test-lines))))
      (agent-bridge-cancel)
      (test-wait "run 2 interrupted" (lambda () (member "✗ interrupted (user)" (test-lines))))
      ;; 6. The traffic log.
      (agent-bridge-log)
      (should (string-match-p "initialize" (buffer-string)))
      (should (string-match-p "interaction/respond" (buffer-string)))
      ;; 7. The bridge restarts (same state dir); the session is listed and reopened.
      (agent-bridge-stop)
      (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))
      (let (listed)
        (agent-bridge-sessions (lambda (buf) (setq listed buf)))
        (test-wait "the session list" (lambda () listed))
        (with-current-buffer listed
          (goto-char (point-min))
          (should (search-forward "Fix-the-build" nil t))
          (should (search-forward sid nil t))
          (agent-bridge-sessions-open)))
      (test-wait "the session resumed" (lambda () (member "— session resumed" (test-lines))))
      (agent-bridge-prompt "again")
      (test-wait "run 3" (lambda () (= 2 (test-count "✓ done (end_turn)"))))
      (let ((lines (vconcat (test-lines)))
            (header (with-current-buffer (agent-bridge--buffer s)
                      (agent-bridge--header-line)))
            chosen)
        ;; 8. A Claude Code session set up in the new session's menu (its CLI the
        ;; project's stand-in, given as the executable option): the model, the mode (its
        ;; enum's values), another option, the title; each line shows what it holds, and
        ;; the model and mode chosen are in the chat's header line.
        (let (claude menus completions)
          (agent-bridge--call 'providers/list nil
                              (lambda (r) (setq claude (seq-find (lambda (p) (equal (plist-get p :id) "claude-code"))
                                                                 (plist-get r :providers)))))
          (test-wait "the providers" (lambda () claude))
          (cl-letf (((symbol-function 'transient-setup)
                     (lambda (name &rest _) (push name menus)))
                    ((symbol-function 'completing-read)
                     (lambda (prompt collection &rest _)
                       (let ((names (mapcar (lambda (c) (if (consp c) (car c) c)) collection)))
                         (push (cons prompt names) completions)
                         (if (equal prompt "Session option: ")
                             (seq-find (lambda (n) (string-prefix-p "executable " n)) names)
                           "plan")))))
            (agent-bridge--options-menu claude)
            (should (equal (agent-bridge--menu-heading) "New claude-code session"))
            (should (equal (substring-no-properties (agent-bridge--menu-model-label))
                           "Model           default"))
            (setq test-picks (list "sonnet" (getenv "AB_FAKE_CLAUDE") "Chosen"))
            (agent-bridge-menu-model)
            (agent-bridge-menu-mode)
            (agent-bridge-menu-other)
            (agent-bridge-menu-title)
            ;; each line read its value and showed the menu again
            (should (equal menus (make-list 5 'agent-bridge-session-menu)))
            (should (member "bypassPermissions"
                            (cdr (assoc "permissionMode (empty: default): " completions))))
            ;; the other options: the declared ones but the model and mode
            (let ((others (cdr (assoc "Session option: " completions))))
              (should (member "allowedTools (stringList)" others))
              (should-not (seq-find (lambda (n) (string-prefix-p "model" n)) others))
              (should-not (seq-find (lambda (n) (string-prefix-p "permissionMode" n)) others)))
            (should (equal (substring-no-properties (agent-bridge--menu-model-label))
                           "Model           sonnet"))
            (should (equal (substring-no-properties (agent-bridge--menu-mode-label))
                           "permissionMode  plan"))
            (should (equal (substring-no-properties (agent-bridge--menu-other-label))
                           (concat "Other options   executable=" (getenv "AB_FAKE_CLAUDE"))))
            (should (equal (substring-no-properties (agent-bridge--menu-title-label))
                           "Title           Chosen"))
            (agent-bridge-menu-create)))
        (test-wait "the claude-code session"
                   (lambda () (not (eq (agent-bridge--current-session) s))))
        (setq chosen (with-current-buffer (agent-bridge--buffer (agent-bridge--current-session))
                       (agent-bridge--header-line)))
        (with-temp-file (getenv "AB_OUT")
          (insert (json-serialize
                   (list :session sid :lines lines :headerLine header
                         :chosenHeaderLine chosen)))))
      (agent-bridge-stop)
      (test-wait "the bridge to stop again" (lambda () (not (agent-bridge-running-p)))))))

;;; emacs_session.el ends here
