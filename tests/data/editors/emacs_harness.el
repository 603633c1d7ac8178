;;; emacs_harness.el --- what the Emacs ERT scenarios share -*- lexical-binding: t; -*-

;; Loaded by each scenario (`emacs_*.el', run by tests/test_editor_emacs.py) from beside it:
;;   (load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
;; ERT, cl-lib and the package (from AB_PACKAGE); a session's chat as lines; a wait that
;; fails naming what it waited for, with the chat and whatever `test-wait-detail' adds.

;;; Code:

(require 'ert)
(require 'cl-lib)
(add-to-list 'load-path (getenv "AB_PACKAGE"))
(require 'agent-bridge)

(defvar test-wait-seconds 30 "How long `test-wait' waits, in seconds.")

(defvar test-wait-detail nil
  "A function of no arguments: more to say (a string) when `test-wait' times out.")

(defun test-lines (&optional s)
  "The chat of S (else the current session), as lines."
  (let ((s (or s (agent-bridge--current-session))))
    (if (not s) nil
      (with-current-buffer (agent-bridge--buffer s)
        (split-string (buffer-substring-no-properties (point-min) (point-max)) "\n")))))

(defun test-wait (what pred)
  "Wait (at most `test-wait-seconds') until PRED holds; fail naming WHAT otherwise."
  (let ((deadline (+ (float-time) test-wait-seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (unless (funcall pred)
      (error "Timed out waiting for %s; chat: %S%s" what (test-lines)
             (if test-wait-detail (funcall test-wait-detail) "")))))

;;; emacs_harness.el ends here
