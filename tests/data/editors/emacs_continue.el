;;; emacs_continue.el --- agent-bridge.el: continue a session of the workspace -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge and the real claude CLI (its
;; model a loopback stand-in): the workspace holds a bridge session (scripted) and a
;; session made with `claude -p' alone.  `agent-bridge-continue' offers both; the
;; Claude Code one, picked, is continued (`provider/sessions/continue'): its earlier turn
;; shows in the chat and the next prompt goes on in that conversation.  Offered again,
;; it is a bridge session now (not twice); the scripted one, picked, reopens.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK (the workspace).

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
(setq test-wait-seconds 60)
(setq test-wait-detail
      (lambda ()
        (format "; stderr: %s"
                (with-current-buffer (get-buffer-create "*agent-bridge stderr*")
                  (buffer-string)))))

(defun test-pick (pattern)
  "Run `agent-bridge-continue', picking the label matching PATTERN; return the labels."
  (let (labels)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (setq labels (mapcar #'car collection))
                 (seq-find (lambda (l) (string-match-p pattern l)) labels))))
      (agent-bridge-continue)
      (test-wait "the picker" (lambda () labels)))
    labels))

(ert-deftest agent-bridge-continue-a-session ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let ((default-directory (file-name-as-directory (getenv "AB_WORK")))
        out bridge-one)
    ;; A bridge session of the workspace.
    (agent-bridge-new-session "scripted" '(:script (:steps [(:type "text" :text "Bridge reply.")]))
                              "Bridge one")
    (test-wait "the scripted session" #'agent-bridge--current-session)
    (setq bridge-one (agent-bridge--current-session))
    (agent-bridge-prompt "hi bridge")
    (test-wait "its run" (lambda () (member "✓ done (end_turn)" (test-lines))))
    ;; The picker: both; the Claude Code session made in the terminal is continued.
    (setq out (list :labels (vconcat (test-pick "claude-code's own session"))))
    (test-wait "the continued session"
               (lambda () (and (not (eq (agent-bridge--current-session) bridge-one))
                               (member "Noted: pelican." (test-lines)))))
    (let ((continued (agent-bridge--current-session)))
      (should (eq (window-buffer (selected-window)) (agent-bridge--buffer continued)))
      (agent-bridge-prompt "what was the word?")
      (test-wait "the next run" (lambda () (member "✓ done (end_turn)" (test-lines))))
      (setq out (append out (list :continued (agent-bridge--session-id continued)
                                  :provider (agent-bridge--session-provider continued)
                                  :lines (vconcat (cdr (test-lines)))))))
    ;; Offered again: the Claude Code session is a bridge session now; the scripted one,
    ;; picked, reopens.
    (setq out (append out (list :labelsAgain (vconcat (test-pick "Bridge one")))))
    (test-wait "the scripted session again"
               (lambda () (eq (agent-bridge--current-session) bridge-one)))
    (setq out (append out (list :bridgeOne (agent-bridge--session-id bridge-one))))
    (with-temp-file (getenv "AB_OUT")
      (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_continue.el ends here
