;;; emacs_session.el --- agent-bridge.el driven through a whole session -*- lexical-binding: t; -*-

;; A whole scripted session driven through the package's own commands in a real
;; `emacs --batch' (ERT), against the real bridge.  `read-multiple-choice' and
;; `read-string' (the editor's prompt seam) are stubbed to pick from `test-picks'.
;; Env: AB_PACKAGE (editors/emacs), AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT.

;;; Code:

(require 'ert)
(require 'cl-lib)
(add-to-list 'load-path (getenv "AB_PACKAGE"))
(require 'agent-bridge)

(defvar test-picks nil "What the stubbed prompts answer, in order.")
(defvar test-asked nil "The prompts shown: (PROMPT CHOICE-NAMES PENDING-COUNT).")

(defun test-read-multiple-choice (prompt choices &rest _)
  "Answer PROMPT with the first of CHOICES named by the next of `test-picks'."
  (let* ((s (agent-bridge--current-session))
         (want (pop test-picks)))
    (push (list prompt (mapcar #'cadr choices) (if s (agent-bridge-pending-count s) 0))
          test-asked)
    (or (seq-find (lambda (c) (equal (cadr c) want)) choices)
        (error "No choice %S in %S" want choices))))

(defun test-read-string (prompt &rest _)
  "Answer PROMPT with the next of `test-picks'."
  (push (list prompt nil 0) test-asked)
  (pop test-picks))

(defun test-lines ()
  "The current session's chat buffer, as lines."
  (let ((s (agent-bridge--current-session)))
    (if (not s) nil
      (with-current-buffer (agent-bridge--buffer s)
        (split-string (buffer-substring-no-properties (point-min) (point-max)) "\n")))))

(defun test-count (line)
  "How many lines of the chat are LINE."
  (cl-count line (test-lines) :test #'equal))

(defun test-wait (what pred)
  "Wait (at most 20 s) until PRED holds; fail naming WHAT otherwise."
  (let ((deadline (+ (float-time) 20)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (unless (funcall pred)
      (error "Timed out waiting for %s; chat: %S" what (test-lines)))))

(ert-deftest agent-bridge-whole-session ()
  (cl-letf (((symbol-function 'read-multiple-choice) #'test-read-multiple-choice)
            ((symbol-function 'read-string) #'test-read-string))
    ;; 1. A bridge that is not there: a clear message with the next step.
    (let* ((agent-bridge-command '("/nonexistent/agent-bridge"))
           (err (should-error (agent-bridge-sessions) :type 'user-error)))
      (should (string-match-p "was not found" (cadr err)))
      (should (string-match-p "pipx install agent-bridge" (cadr err))))
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
        (setq test-picks '("sonnet" "Claude"))
        (agent-bridge-new-session)
        (test-wait "the pickers" (lambda () messages))
        (let ((provider (car (last collections))) (mode (car collections)))
          (should (equal (car provider) "agent-bridge provider: "))
          (should (member "scripted" (cdr provider)))
          (should (seq-find (lambda (l) (string-prefix-p "claude-code — unavailable: the claude executable was not found" l))
                            (cdr provider)))
          (should (equal (cdr mode) '("default" "acceptEdits" "plan" "bypassPermissions"
                                      "dontAsk" "auto"))))
        (should (string-prefix-p "claude-code is not available: " (car messages)))
        (should (string-match-p "next step: install Claude Code" (car messages)))
        (setq test-asked nil)))
    ;; 2. A session on the scripted provider.
    (agent-bridge-new-session "scripted" (list :scriptFile (getenv "AB_SCRIPT")) "Fix-the-build")
    (test-wait "the session" (lambda () (agent-bridge--current-session)))
    (let* ((s (agent-bridge--current-session))
           (sid (agent-bridge--session-id s)))
      ;; 3. A run: streamed text and thinking, an approval, an edit, a question.
      (setq test-picks '("allow for session" "Yes"))
      (agent-bridge-prompt "Fix the build")
      (test-wait "run 1" (lambda () (member "✓ done (end_turn)" (test-lines))))
      (let ((approval (car (last test-asked))) (question (car (last test-asked 2))))
        (should (equal (nth 1 approval) '("allow once" "allow for session" "deny")))
        (should (equal (nth 2 approval) 1))
        (should (equal (nth 1 question) '("Yes" "No"))))
      ;; Thinking and the tool call are folded: their bodies are invisible.
      (with-current-buffer (agent-bridge--buffer s)
        (goto-char (point-min))
        (search-forward "  │ Let me look at the build.")
        (should (invisible-p (match-beginning 0)))
        (search-forward "  │ edit Makefile")
        (should (invisible-p (match-beginning 0)))
        (search-backward "▸ tool Edit")
        (agent-bridge-toggle-block)
        (search-forward "  │ edit Makefile")
        (should-not (invisible-p (match-beginning 0))))
      ;; 4. The edit in diff-mode.
      (with-current-buffer (agent-bridge--buffer s)
        (with-current-buffer (agent-bridge-diff)
          (should (derived-mode-p 'diff-mode))
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
      (with-temp-file (getenv "AB_OUT")
        (insert (json-serialize
                 (list :session sid
                       :lines (vconcat (test-lines))
                       :headerLine (with-current-buffer (agent-bridge--buffer s)
                                     (agent-bridge--header-line))))))
      (agent-bridge-stop)
      (test-wait "the bridge to stop again" (lambda () (not (agent-bridge-running-p)))))))

;;; emacs_session.el ends here
