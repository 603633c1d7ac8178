;;; emacs_context.el --- agent-bridge.el: the region or a file as context -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge; the scripted provider's
;; `received' step answers with the blocks the run's input held.  `agent-bridge-send'
;; with a region of a saved file sends a `file' block with its lines; with an empty
;; prompt the whole file is attached to the next prompt (the prompt area's header line
;; says so); a modified file's buffer and a buffer with no file go as `resource' blocks
;; with their text; the chat shows what each prompt carried.  The session's commands
;; (`session/commands'): `/' in the chat picks one, the prompt area completes `/name',
;; each sent as a `command' block; `commands.updated' changes them.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_SCRIPT, AB_OUT, AB_WORK (the workspace).

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)

(defun test-done (n)
  "Wait until the chat shows N ended runs."
  (test-wait (format "run %d" n)
             (lambda () (= n (cl-count "✓ done (end_turn)" (test-lines) :test #'equal)))))

(defun test-received ()
  "The blocks the provider received in the last run (its `received' answer)."
  (let ((line (seq-find (lambda (l) (string-prefix-p "[{" l)) (reverse (test-lines)))))
    (json-parse-string line :object-type 'plist)))

(defun test-send (prompt)
  "Run `agent-bridge-send' as a command, answering its prompt with PROMPT."
  (let (asked)
    (cl-letf (((symbol-function 'read-string) (lambda (p &rest _) (setq asked p) prompt)))
      (call-interactively #'agent-bridge-send))
    asked))

(ert-deftest agent-bridge-context ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (transient-mark-mode 1)
  (let ((default-directory (file-name-as-directory (getenv "AB_WORK")))
        out)
    (find-file "src.py")
    (let ((src (current-buffer)))
      (agent-bridge-new-session "scripted" (list :scriptFile (getenv "AB_SCRIPT")) "Context")
      (test-wait "the session" #'agent-bridge--current-session)
      (let ((s (agent-bridge--current-session)))
        ;; 1. Lines 2-4 of src.py, the region, sent with a prompt.
        (switch-to-buffer src)
        (goto-char (point-min))
        (forward-line 1)
        (push-mark (point) t t)
        (forward-line 3)                ; the region ends at line 5's start
        (setq out (list :askedSelection (test-send "Explain this")))
        (test-done 1)
        (setq out (append out (list :selection (test-received))))
        ;; 2. The whole file (no region), attached to the next prompt.
        (switch-to-buffer src)
        (deactivate-mark)
        (test-send "")
        (should (equal (agent-bridge--session-context s)
                       (list (list :type "file" :path (expand-file-name "src.py")))))
        (let ((input (agent-bridge-input)))
          (setq out (append out (list :inputHeader
                                      (with-current-buffer input
                                        (agent-bridge--input-header-line)))))
          (with-current-buffer input
            (insert "What is it?")
            (agent-bridge-input-send)))
        (test-done 2)
        (should-not (agent-bridge--session-context s))
        (setq out (append out (list :wholeFile (test-received))))
        ;; 3. The same file, modified and not saved: its text as a resource.
        (switch-to-buffer src)
        (goto-char (point-max))
        (insert "print('more')\n")
        (test-send "Changed")
        (test-done 3)
        (setq out (append out (list :modified (test-received))))
        ;; 4. A buffer with no file: its text as a resource.
        (switch-to-buffer (get-buffer-create "notes"))
        (insert "x = 1\ny = 2")
        (test-send "Look")
        (test-done 4)
        (setq out (append out (list :resource (test-received))))
        ;; 5. `/' in the chat: the session's commands (session/commands), one picked and
        ;; its arguments typed: a `command' block.
        (let (offered)
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (_prompt collection &rest _)
                       (setq offered (mapcar #'car collection))
                       (car offered)))
                    ((symbol-function 'read-string) (lambda (&rest _) "error handling")))
            (switch-to-buffer (agent-bridge--buffer s))
            (execute-kbd-macro (kbd "/")))
          (setq out (append out (list :offered (vconcat offered)))))
        (test-done 5)
        (setq out (append out (list :command (test-received))))
        ;; 6. In the prompt area, /re completed (completion-at-point) and sent.
        (with-current-buffer (format "*agent-bridge input %s*" (agent-bridge--session-id s))
          (insert "/re")
          (completion-at-point)
          (setq out (append out (list :completed (buffer-string))))
          (insert "the tests")
          (agent-bridge-input-send))
        (test-done 6)
        (setq out (append out (list :completedCommand (test-received))))
        ;; 7. A run whose provider changes its commands (commands.updated).
        (agent-bridge-prompt "Add a command")
        (test-done 7)
        (setq out (append out (list :commandsAfter
                                    (vconcat (mapcar (lambda (c) (plist-get c :name))
                                                     (agent-bridge--session-commands s)))
                                    :lines (vconcat (test-lines)))))
        ;; A session made from the chat takes its session's workspace, wherever the
        ;; chat buffer's directory is.
        (with-current-buffer (agent-bridge--buffer s)
          (let ((default-directory "/"))
            (should (equal (agent-bridge--workspace)
                           (directory-file-name (file-truename (getenv "AB_WORK")))))))
        ;; From the chat itself: refused, nothing is sent.
        (switch-to-buffer (agent-bridge--buffer s))
        (should-error (agent-bridge-send "x") :type 'user-error)))
    (with-temp-file (getenv "AB_OUT")
      (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_context.el ends here
