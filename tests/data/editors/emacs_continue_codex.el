;;; emacs_continue_codex.el --- agent-bridge.el: continue Codex's own session -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge and the real codex CLI (its
;; model the loopback Responses stand-in): the workspace holds a thread made with
;; `codex exec' alone.  `agent-bridge-continue' offers it; picked, it is continued
;; (`provider/sessions/continue'): its earlier turn shows in the chat and the next prompt
;; goes on in that thread.  Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK.

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
(setq test-wait-seconds 90)
(setq test-wait-detail
      (lambda ()
        (format "; stderr: %s"
                (with-current-buffer (get-buffer-create "*agent-bridge stderr*")
                  (buffer-string)))))

(ert-deftest agent-bridge-continue-a-codex-session ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let ((default-directory (file-name-as-directory (getenv "AB_WORK")))
        labels out)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (setq labels (mapcar #'car collection))
                 (seq-find (lambda (l) (string-match-p "codex's own session" l)) labels))))
      (agent-bridge-continue)
      (test-wait "the picker" (lambda () labels)))
    (test-wait "the continued session"
               (lambda () (member "Noted: pelican." (test-lines))))
    (let ((s (agent-bridge--current-session)))
      (should (eq (window-buffer (selected-window)) (agent-bridge--buffer s)))
      (agent-bridge-prompt "what was the word?")
      (test-wait "the next run"
                 (lambda () (seq-find (lambda (l) (string-prefix-p "✓ done" l)) (test-lines))))
      (setq out (list :labels (vconcat labels)
                      :provider (agent-bridge--session-provider s)
                      :lines (vconcat (cdr (test-lines))))))
    (with-temp-file (getenv "AB_OUT")
      (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_continue_codex.el ends here
