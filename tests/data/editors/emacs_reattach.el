;;; emacs_reattach.el --- agent-bridge.el reattaching through the daemon -*- lexical-binding: t; -*-

;; Two real `emacs --batch' runs (AB_PHASE 1 then 2) on `agent-bridge connect' (one
;; daemon, one state dir): 1. a run asks an approval, the prompt opened by `a' in the
;; chat is quit (C-g), so it stays pending, and Emacs exits (the host detaches); 2. a
;; fresh Emacs lists the session (active), reattaches: the history is replayed, the
;; approval is pending again and `a o' in the chat allows it.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_PHASE, AB_OUT.

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
(setq test-wait-seconds 20)

(defvar test-asked nil "The prompts shown: (PROMPT PENDING-COUNT).")
(defvar test-listed-pending nil "The Pending column of the session in the list.")
(defconst test-read-key (symbol-function 'read-key))

(defun test-read-key (prompt &rest args)
  "Record PROMPT, then read the key as `read-key' does (ARGS)."
  (let ((s (agent-bridge--current-session)))
    (push (list prompt (if s (agent-bridge-pending-count s) 0)) test-asked))
  (apply test-read-key prompt args))

(defun test-type (keys)
  "Type KEYS (a `kbd' string) in the current session's chat buffer."
  (switch-to-buffer (agent-bridge--buffer (agent-bridge--current-session)))
  (execute-kbd-macro (kbd keys)))

(defun test-save (&rest plist)
  "Write PLIST as JSON to AB_OUT."
  (with-temp-file (getenv "AB_OUT") (insert (json-serialize plist))))

(ert-deftest agent-bridge-reattach ()
  (cl-letf (((symbol-function 'read-key) #'test-read-key))
    (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
          agent-bridge-subcommand "connect"
          agent-bridge-state-directory (getenv "AB_STATE"))
    (if (equal (getenv "AB_PHASE") "1")
        (let ((script (make-temp-file "script" nil ".json")))
          (with-temp-file script
            (insert (json-serialize
                     '(:steps [(:type "text" :text "Ready to deploy.")
                               (:type "approval" :title "Deploy to production"
                                :modes ["once" "session"]
                                :onAllow [(:type "text" :text "Deployed after the reattach.")]
                                :onDeny [(:type "text" :text "Not deploying.")])]))))
          (agent-bridge-new-session "scripted" (list :scriptFile script) "Deploy")
          (test-wait "the session" #'agent-bridge--current-session)
          (agent-bridge-prompt "Deploy it")
          (test-wait "the approval" (lambda () (member "? approval: Deploy to production"
                                                       (test-lines))))
          (accept-process-output nil 0.3)
          (should-not test-asked)     ; nothing asks on its own
          (test-type "a C-g")
          (should test-asked)
          (accept-process-output nil 0.3)
          (let ((s (agent-bridge--current-session)))
            (should (= 1 (agent-bridge-pending-count s)))
            (test-save :session (agent-bridge--session-id s) :lines (vconcat (test-lines))))
          ;; Leave without shutdown: the host detaches, the run waits in the daemon.
          (jsonrpc-shutdown agent-bridge--connection))
      (let (listed)
        (agent-bridge-sessions (lambda (buf) (setq listed buf)))
        (test-wait "the list" (lambda () listed))
        (with-current-buffer listed
          (goto-char (point-min))
          (should (search-forward "active" nil t))
          (setq test-listed-pending (aref (tabulated-list-get-entry) 3))
          (agent-bridge-sessions-open)))
      (test-wait "the approval" (lambda () (= 1 (agent-bridge-pending-count
                                                 (agent-bridge--current-session)))))
      (test-type "a o")
      (test-wait "the run" (lambda () (member "✓ done (end_turn)" (test-lines))))
      (test-save :session (agent-bridge--session-id (agent-bridge--current-session))
                 :pendingWhenAsked (nth 1 (car test-asked))
                 :listedPending test-listed-pending
                 :lines (vconcat (test-lines)))
      (agent-bridge-stop)
      (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p)))))))

;;; emacs_reattach.el ends here
