;;; emacs_buttons.el --- agent-bridge.el: a question's free text and a question set by button -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge: a question that takes free
;; text has an [Other…] button after its choices, a question set an [Answer…] button;
;; each asks (the minibuffer, one key per choice) only when pressed, and a dismissed
;; one stays pending with its buttons.  Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT.

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)

(defun test-press (label)
  "Press the button LABEL (RET on it) in the current chat."
  (let ((buf (agent-bridge--buffer (agent-bridge--current-session))))
    (switch-to-buffer buf)
    (goto-char (point-max))
    (search-backward label)
    (execute-kbd-macro (kbd "RET"))))

(ert-deftest agent-bridge-question-buttons ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let (out)
    (agent-bridge-new-session
     "scripted"
     '(:script (:steps [(:type "question" :prompt "Which branch?" :allowFreeText t
                         :choices [(:id "main" :label "main") (:id "dev" :label "dev")])
                        (:type "questionSet" :title "Project setup"
                         :items [(:key "name" :prompt "Project name?")
                                 (:key "license" :prompt "License?"
                                  :choices [(:id "mit" :label "MIT")
                                            (:id "apache" :label "Apache-2.0")])])]))
     "Buttons")
    (test-wait "the session" #'agent-bridge--current-session)
    (agent-bridge-prompt "Set it up")
    (test-wait "the question" (lambda () (member "  [main] [dev] [Other…]" (test-lines))))
    ;; [Other…] asks for the text; an empty answer dismisses it: still pending.
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "")))
      (test-press "[Other…]"))
    (accept-process-output nil 0.3)
    (should (= 1 (agent-bridge-pending-count (agent-bridge--current-session))))
    (should (member "  [main] [dev] [Other…]" (test-lines)))
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "feature-x")))
      (test-press "[Other…]"))
    (test-wait "the question set" (lambda () (member "  [Answer…]" (test-lines))))
    ;; [Answer…] asks each item: the name (text), the license (one key: 2).
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "demo"))
              ((symbol-function 'read-key) (lambda (&rest _) ?2)))
      (test-press "[Answer…]"))
    (test-wait "the run" (lambda () (member "✓ done (end_turn)" (test-lines))))
    (setq out (list :lines (vconcat (cdr (test-lines)))))
    (with-temp-file (getenv "AB_OUT") (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;; Two pending interactions' buttons in a chat buffer: M-n / M-p step through every
;; answer button (wrapping around), C-c C-n / C-c C-p jump to each interaction's first.
(ert-deftest agent-bridge-move-between-buttons ()
  (switch-to-buffer (generate-new-buffer "*chat*"))  ; keys go to the selected window's
  (progn
    (agent-bridge-chat-mode)
    (let ((inhibit-read-only t)
          (approval '(:kind "approval" :title "Edit Makefile"
                      :modes ["once" "session"]))
          (question '(:kind "question" :prompt "Tests?"
                      :choices [(:id "y" :label "Yes") (:id "n" :label "No")])))
      (insert "# chat\n" (agent-bridge--pending-line "i1" approval) "\n"
              (agent-bridge--buttons-line "i1" approval) "\ntext\n"
              (agent-bridge--pending-line "i2" question) "\n"
              (agent-bridge--buttons-line "i2" question) "\nend"))
    (let ((at (lambda () (buffer-substring-no-properties
                          (point) (next-single-property-change (point) 'agent-bridge-answer))))
          (keys (lambda (k) (execute-kbd-macro (kbd k))))
          said)
      (goto-char (point-max))
      (cl-letf (((symbol-function 'agent-bridge--message)
                 (lambda (&rest args) (setq said (apply #'format args)))))
        (funcall keys "M-n"))             ; wraps around to the first
      (should (equal (funcall at) "[Allow once]"))
      (should (equal said "[Allow once], wrapped around — RET answers"))
      (funcall keys "M-n")
      (should (equal (funcall at) "[Allow for session]"))
      (funcall keys "M-n M-n")
      (should (equal (funcall at) "[Yes]"))
      (funcall keys "M-p")
      (should (equal (funcall at) "[Deny]"))
      (funcall keys "C-c C-n")            ; from a button: the next interaction's first
      (should (equal (funcall at) "[Yes]"))
      (funcall keys "C-c C-p")
      (should (equal (funcall at) "[Allow once]"))
      (funcall keys "C-c C-p")            ; wraps around to the last
      (should (equal (funcall at) "[Yes]"))
      (goto-char (point-min))
      (funcall keys "C-c C-n")
      (should (equal (funcall at) "[Allow once]")))))

;; New text in the chat: a window at its end follows it; one whose point the user moved
;; to a button stays there, so RET still presses it.
(ert-deftest agent-bridge-output-keeps-point-on-a-button ()
  (let* ((s (agent-bridge--session "ses_follow"))
         (approval '(:kind "approval" :title "Edit Makefile" :modes ["once" "session"])))
    (switch-to-buffer (agent-bridge--buffer s))
    (agent-bridge--append s (list (agent-bridge--pending-line "i1" approval)
                                  (agent-bridge--buttons-line "i1" approval)))
    (goto-char (point-max))
    (agent-bridge--append s '("streamed while it waits"))
    (should (= (window-point) (point-max)))   ; followed
    (agent-bridge--stream s "more text" 'text)
    (should (= (window-point) (point-max)))
    (execute-kbd-macro (kbd "C-c C-p"))
    (let ((on (point)))
      (should (get-text-property on 'agent-bridge-answer))
      (agent-bridge--append s '("a subagent's line"))
      (agent-bridge--stream s " and its text" 'text)
      (agent-bridge--block s 'thinking "thinking")
      (agent-bridge--block-body s 'thinking '("a thought"))
      (should (= (window-point) on))          ; stayed on [Allow once]
      (should (equal (buffer-substring-no-properties
                      on (next-single-property-change on 'agent-bridge-answer))
                     "[Allow once]")))))

;;; emacs_buttons.el ends here
