;;; emacs_fork_limits.el --- agent-bridge.el: limits, subagents, fork -*- lexical-binding: t; -*-

;; In a real `emacs --batch' (ERT) against the real bridge: a scripted run whose
;; subagent's calls fold under the subagent's call, which reports a limit (a line, and
;; the header line) and fails on it (the failure says when it resets, in local time);
;; `f' there is refused (the scripted provider cannot fork: its descriptor says so);
;; then a Claude Code session (the real claude CLI, its model a loopback stand-in) of
;; two runs is forked, with
;; `f' on the first run, into a new session that opens with that run's history only;
;; a third run's text message is forked at (`f' on it), and at its first delta.
;; Env: AB_PACKAGE, AB_BRIDGE, AB_STATE, AB_OUT, AB_CLAUDE, AB_SCRIPT (the run's
;; script, a file).

;;; Code:

(load (expand-file-name "emacs_harness.el" (file-name-directory load-file-name)) nil t)
(setq test-wait-detail
      (lambda ()
        (format "; traffic: %s"
                (if agent-bridge--connection
                    (with-current-buffer (jsonrpc-events-buffer agent-bridge--connection)
                      (buffer-substring-no-properties (max (point-min) (- (point-max) 3000))
                                                      (point-max)))
                  ""))))

(ert-deftest agent-bridge-fork-limits-subagents ()
  (setq agent-bridge-command (list (getenv "AB_BRIDGE"))
        agent-bridge-state-directory (getenv "AB_STATE"))
  (let (out)
    ;; 1. Subagents and limits (the scripted provider).
    (agent-bridge-new-session "scripted" (list :scriptFile (getenv "AB_SCRIPT")) "Limits")
    (test-wait "the scripted session" #'agent-bridge--current-session)
    (let ((s (agent-bridge--current-session)))
      (agent-bridge-prompt "Look into it")
      (test-wait "the run to fail"
                 (lambda () (seq-find (lambda (l) (string-prefix-p "✗ failed" l)) (test-lines))))
      (with-current-buffer (agent-bridge--buffer s)
        ;; the subagent's call is folded under its parent: its line is invisible
        (goto-char (point-min))
        (search-forward "  │ ↳ tool Read")
        (should (invisible-p (match-beginning 0)))
        (search-backward "▸ subagent")
        (should-not (invisible-p (point)))
        (agent-bridge-toggle-block)
        (search-forward "  │ ↳ tool Read")
        (should-not (invisible-p (match-beginning 0)))
        (setq out (list :limitsLines (vconcat (test-lines s))
                        :limitsHeader (agent-bridge--header-line))))
      ;; `f' on a scripted run: its descriptor has no capabilities.fork, so it is
      ;; refused before asking the bridge (no session/fork is sent).
      (let (said)
        (cl-letf (((symbol-function 'agent-bridge--message)
                   (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
          (switch-to-buffer (agent-bridge--buffer s))
          (goto-char (point-min))
          (search-forward "✗ failed")
          (execute-kbd-macro (kbd "f"))
          (test-wait "the refusal" (lambda () said)))
        (should (equal said '("scripted cannot fork a session")))
        (should (eq (agent-bridge--current-session) s))
        (with-current-buffer (jsonrpc-events-buffer agent-bridge--connection)
          (should-not (string-match-p ":method \"session/fork\"" (buffer-string))))
        (switch-to-buffer "*scratch*")))
    ;; 2. Fork (Claude Code: its CLI is the project's stand-in).
    (agent-bridge-new-session "claude-code" (list :executable (getenv "AB_CLAUDE")
                                                  :allowedTools ["Bash"])
                              "Forked")
    (test-wait "the claude-code session"
               (lambda () (equal (agent-bridge--session-provider (agent-bridge--current-session))
                                 "claude-code")))
    (let ((s (agent-bridge--current-session)))
      (agent-bridge-prompt "ECHO:first")
      (test-wait "run 1" (lambda () (member "✓ done (end_turn)" (test-lines s))))
      (agent-bridge-prompt "ECHO:second")
      (test-wait "run 2" (lambda () (= 2 (cl-count "✓ done (end_turn)" (test-lines s)
                                                   :test #'equal))))
      ;; `f' on the first run's outcome line forks at its end.
      (switch-to-buffer (agent-bridge--buffer s))
      (goto-char (point-min))
      (search-forward "✓ done")
      (execute-kbd-macro (kbd "f"))
      (test-wait "the fork" (lambda () (not (equal agent-bridge--current
                                                   (agent-bridge--session-id s)))))
      (let ((fork (gethash agent-bridge--current agent-bridge--sessions)))
        (set-buffer (agent-bridge--buffer fork))
        (test-wait "the fork's history" (lambda () (member "✓ done (end_turn)" (test-lines fork))))
        (should (eq (window-buffer (selected-window)) (agent-bridge--buffer fork)))
        (agent-bridge-prompt "ECHO:third")
        (test-wait "the fork's run"
                   (lambda () (= 2 (cl-count "✓ done (end_turn)" (test-lines fork)
                                             :test #'equal))))
        (setq out (append out (list :original (agent-bridge--session-id s)
                                    :originalLines (vconcat (test-lines s))
                                    :fork (agent-bridge--session-id fork)
                                    :forkLines (vconcat (test-lines fork))))))
      ;; 3. Fork from a message (Claude Code forks at messages): a run of a text, a
      ;; Read call and the answer; `f' on the text forks at its last delta, nothing
      ;; said; at its first delta (a prefix argument) the agent's own history is cut
      ;; before that message, and a message says so.
      (switch-to-buffer (agent-bridge--buffer s))
      (setq agent-bridge--current (agent-bridge--session-id s))
      (agent-bridge-prompt "SAY:Let me look at it.;READ:hello.py")
      (test-wait "run 3" (lambda () (= 3 (cl-count "✓ done (end_turn)" (test-lines s)
                                                   :test #'equal))))
      (let (said first-delta)
        (cl-letf (((symbol-function 'agent-bridge--message)
                   (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
          (switch-to-buffer (agent-bridge--buffer s))
          (goto-char (point-min))
          (re-search-forward "^Let me look at it\\.$")
          (setq first-delta (get-text-property (match-beginning 0) 'agent-bridge-message))
          (execute-kbd-macro (kbd "f"))
          (test-wait "the message fork" (lambda () (not (equal agent-bridge--current
                                                                (agent-bridge--session-id s)))))
          (let ((fork (gethash agent-bridge--current agent-bridge--sessions)))
            (test-wait "the message fork's history"
                       (lambda () (member "Let me look at it." (test-lines fork))))
            (accept-process-output nil 0.5)
            (setq out (append out (list :messageForkLines (vconcat (test-lines fork))
                                        :messageSaid (vconcat said))))
            ;; its next run continues from the text (the model sees it, not the call)
            (with-current-buffer (agent-bridge--buffer fork)
              (agent-bridge-prompt "what did you say?"))
            (test-wait "the message fork's run"
                       (lambda () (member "I said I would look." (test-lines fork))))
            (setq said nil)
            (switch-to-buffer (agent-bridge--buffer s))
            (agent-bridge-fork first-delta)
            (test-wait "the cut notice" (lambda () said))
            (setq out (append out (list :originalLines3 (vconcat (test-lines s))
                                        :cutAt first-delta
                                        :cutSaid (vconcat said))))))))
    (with-temp-file (getenv "AB_OUT") (insert (json-serialize out)))
    (agent-bridge-stop)
    (test-wait "the bridge to stop" (lambda () (not (agent-bridge-running-p))))))

;;; emacs_fork_limits.el ends here
