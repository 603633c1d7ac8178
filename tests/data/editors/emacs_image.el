;;; emacs_image.el --- agent-bridge.el: an image file sent as context -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge: `agent-bridge-send' from an
;; image file's buffer sends it as an `image' block, by its path inside the session's
;; workspace, by its bytes from elsewhere; the scripted provider's `received' step
;; answers what it got, and the chat shows what each prompt carried.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT, AB_WORK, AB_OUTSIDE (an image elsewhere).

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)

(defun test-send-file (file prompt n)
  "Visit FILE, send it with PROMPT as run N; return (ASKED RECEIVED)."
  (let (asked)
    ;; visited literally: batch Emacs has no display for `image-mode'
    (find-file-literally file)
    (cl-letf (((symbol-function 'read-string) (lambda (p &rest _) (setq asked p) prompt)))
      (call-interactively #'agent-bridge-send))
    (test-wait (format "run %d" n)
               (lambda () (= n (cl-count "✓ done (end_turn)" (test-lines) :test #'equal))))
    (list asked
          (json-parse-string (seq-find (lambda (l) (string-prefix-p "[{" l))
                                       (reverse (test-lines)))
                             :object-type 'plist))))

(ert-deftest agent-bridge-send-an-image ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let ((default-directory (file-name-as-directory (getenv "AB_WORK")))
        out)
    (agent-bridge-new-session "scripted" '(:script (:steps [(:type "received")])) "Images")
    (test-wait "the session" #'agent-bridge--current-session)
    (let ((inside (test-send-file "shot.png" "What is on it?" 1))
          (outside (test-send-file (getenv "AB_OUTSIDE") "And this one?" 2)))
      (setq out (list :askedInside (car inside) :inside (cadr inside)
                      :askedOutside (car outside) :outside (cadr outside)
                      :lines (vconcat (test-lines)))))
    (with-temp-file (getenv "AB_OUT") (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_image.el ends here
