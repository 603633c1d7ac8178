;;; emacs_settings.el --- agent-bridge.el: switch a session's model and mode -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge: `m' in the chat offers the
;; models and modes `session/settings' gives (the scripted provider's `settings'), the one
;; picked is set with `session/configure'; the chat and its header line show the
;; `settings.updated' that follows.  A session whose provider offers none says so.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT.

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)

(defun test-m (pick)
  "Type `m' in the current chat, picking the choice starting with PICK; return the choices."
  (let (offered)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (setq offered (mapcar #'car collection))
                 (seq-find (lambda (c) (string-prefix-p pick c)) offered))))
      (switch-to-buffer (agent-bridge--buffer (agent-bridge--current-session)))
      (execute-kbd-macro (kbd "m"))
      (test-wait "the choices" (lambda () offered)))
    offered))

(ert-deftest agent-bridge-model-and-mode ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let (out)
    (agent-bridge-new-session
     "scripted"
     '(:script (:settings (:model (:current "small" :available [(:id "small" :name "Small")
                                                                 (:id "large" :name "Large")])
                           :mode (:current "ask" :available [(:id "ask") (:id "auto")]))
                :steps [(:type "text" :text "Done.")]))
     "Settings")
    (test-wait "the session" #'agent-bridge--current-session)
    (setq out (list :offered (vconcat (test-m "model large"))))
    (test-wait "the model" (lambda () (member "— model large · mode ask" (test-lines))))
    (test-m "mode auto")
    (test-wait "the mode" (lambda () (member "— model large · mode auto" (test-lines))))
    (setq out (append out (list :header (with-current-buffer
                                            (agent-bridge--buffer (agent-bridge--current-session))
                                          (agent-bridge--header-line)))))
    ;; A provider that offers none: a message, nothing asked.
    (switch-to-buffer "*scratch*")
    (agent-bridge-new-session "scripted" '(:script (:steps [(:type "text" :text "x")])) "None")
    (test-wait "the second session"
               (lambda () (equal (agent-bridge--session-title (agent-bridge--current-session))
                                 "None")))
    (let (said asked)
      (cl-letf (((symbol-function 'agent-bridge--message)
                 (lambda (fmt &rest args) (push (apply #'format fmt args) said)))
                ((symbol-function 'completing-read)
                 (lambda (&rest _) (setq asked t) nil)))
        (switch-to-buffer (agent-bridge--buffer (agent-bridge--current-session)))
        (execute-kbd-macro (kbd "m"))
        (test-wait "the message" (lambda () said)))
      (should-not asked)
      (setq out (append out (list :none (car said)))))
    (with-temp-file (getenv "AB_OUT") (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_settings.el ends here
