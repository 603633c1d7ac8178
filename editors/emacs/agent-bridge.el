;;; agent-bridge.el --- Sessions with AI coding agents through agent-bridge -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The agent-bridge authors

;; Author: The agent-bridge authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, processes
;; URL: https://agent-bridge.invalid/editors/emacs
;; SPDX-License-Identifier: MIT

;; This file is not part of GNU Emacs.

;;; Commentary:

;; agent-bridge drives AI coding agents (Claude Code, Codex, ACP agents, a
;; built-in scripted provider) for editors: Emacs spawns `agent-bridge serve'
;; and speaks JSON-RPC to it with the built-in `jsonrpc' library.  Every
;; request is asynchronous (`jsonrpc-async-request').
;;
;; Commands:
;;   `agent-bridge-new-session'  pick a provider, its model and mode, start
;;   `agent-bridge-prompt'       start a run in the current session
;;   `agent-bridge-cancel'       interrupt the current run
;;   `agent-bridge-send'         the region or the file as context
;;   `agent-bridge-continue'     continue a bridge or a provider's own session
;;   `agent-bridge-sessions'     the journal's sessions; RET reattaches/resumes
;;   `agent-bridge-approvals'    answer a pending approval or question
;;                               (`a' in the chat, or RET on its "? " line)
;;   `agent-bridge-diff'         an edit of the session in `diff-mode'
;;   `agent-bridge-ediff'        the same edit in `ediff'
;;   `agent-bridge-log'          the protocol traffic log
;;   `agent-bridge-stop'         shut the bridge down
;;
;; An approval or question is never asked on its own: it shows as a "? "
;; line in the chat, its answers as buttons under it, and in the header
;; line's pending count.  Only a deliberate act there answers it: RET or
;; a click on a button, or `a' (or RET on the "? " line) to open its
;; prompt.  The prompt offers the request's modes (allow once, allow for
;; the session, deny); C-g, ESC, q or any other key dismiss it and the
;; request stays pending.  See README.md.

;;; Code:

(require 'cl-lib)
(require 'diff)
(require 'jsonrpc)
(require 'parse-time)
(require 'project)
(require 'seq)
(require 'subr-x)
(require 'tabulated-list)
(require 'text-property-search)
(require 'transient)

(declare-function ediff-buffers "ediff" (buffer-a buffer-b &optional startup-hooks job-name))

(defgroup agent-bridge nil
  "Sessions with AI coding agents through agent-bridge."
  :group 'tools
  :prefix "agent-bridge-")

(defcustom agent-bridge-command nil
  "The bridge command, a list of strings (program and arguments).
nil means `agent-bridge' on variable `exec-path'."
  :type '(choice (const :tag "Find it" nil) (repeat string)))

(defcustom agent-bridge-subcommand "serve"
  "The bridge subcommand: \"serve\", or \"connect\" to use its daemon."
  :type 'string)

(defcustom agent-bridge-state-directory nil
  "The bridge's state directory (its session journal); nil: its default."
  :type '(choice (const :tag "The bridge's default" nil) directory))

(defcustom agent-bridge-extra-arguments nil
  "Further arguments for the bridge subcommand."
  :type '(repeat string))

(defcustom agent-bridge-environment nil
  "Extra environment for the bridge: a list of \"NAME=VALUE\" strings."
  :type '(repeat string))

(defvar agent-bridge--connection nil
  "The running bridge connection, or nil.")

(defvar agent-bridge--ready nil
  "Non-nil once the bridge answered `initialize'.")

(defvar agent-bridge--waiting nil
  "Functions to call with the connection once it is ready.")

(defvar agent-bridge--sessions (make-hash-table :test #'equal)
  "Session id -> its state (an `agent-bridge--session').")

(defvar agent-bridge--providers nil
  "The providers' descriptors, as `providers/list' gave them last.")

(defvar agent-bridge--current nil
  "The id of the session used last.")

(defvar-local agent-bridge--session-id nil
  "The session id of this chat buffer.")

(defvar-local agent-bridge--starting nil
  "Non-nil in a chat buffer whose session is being created.")

(cl-defstruct (agent-bridge--session (:constructor agent-bridge--session-make)
                                     (:copier nil))
  id provider title state active-run (last-seq 0) pending edits blocks tail buffer ended
  chosen limits context workspace commands)

(defun agent-bridge--message (format-string &rest args)
  "Show FORMAT-STRING with ARGS as an agent-bridge message."
  (apply #'message (concat "agent-bridge: " format-string) args))

;;;; Errors

(defun agent-bridge-format-error (err)
  "Return the text to show for ERR, a JSON-RPC error object (a plist).
It names the classified `data.code', not the JSON-RPC code, and the
next step when there is one."
  (let* ((data (plist-get err :data))
         (data (and (listp data) data))
         (details (plist-get data :details))
         (code (or (plist-get data :code) (format "%s" (plist-get err :code))))
         (text (format "%s: %s" code (or (plist-get data :message)
                                         (plist-get err :message) ""))))
    (cond ((plist-get details :nextStep)
           (format "%s — next step: %s" text (plist-get details :nextStep)))
          ((plist-get details :reason)
           (format "%s (%s)" text (plist-get details :reason)))
          (t text))))

;;;; The bridge

(defconst agent-bridge--install-step
  "agent-bridge is not on PyPI yet: install it from a clone (pipx install \
/path/to/agent-bridge, or uv tool install /path/to/agent-bridge), or set \
`agent-bridge-command' to a clone's .venv/bin/agent-bridge (made by bash \
scripts/setup.sh)"
  "How to install agent-bridge before its first release (see its README).")

(defun agent-bridge--command ()
  "Return the bridge argv, or signal `user-error' with the next step.
There is no `uvx agent-bridge' fallback: agent-bridge is not on PyPI yet,
so it would only fail in uv's resolver."
  (let ((cmd agent-bridge-command))
    (cond
     (cmd
      (unless (executable-find (car cmd))
        (user-error "The agent-bridge command %S was not found: fix \
`agent-bridge-command'; %s" (car cmd) agent-bridge--install-step))
      cmd)
     ((executable-find "agent-bridge") (list "agent-bridge"))
     (t (user-error "The agent-bridge command was not found on `exec-path': %s"
                    agent-bridge--install-step)))))

(defun agent-bridge--argv ()
  "Return the full argv the bridge is started with."
  (append (agent-bridge--command)
          (list agent-bridge-subcommand)
          (and agent-bridge-state-directory
               (list "--state-dir" (expand-file-name agent-bridge-state-directory)))
          agent-bridge-extra-arguments))

(defun agent-bridge--defer-filter (filter proc string)
  "Run FILTER on PROC's STRING, continuing after a deferred request.
A request dispatcher throws `agent-bridge--deferred' to leave a
request unanswered for now (it is answered later); the rest of the
output is then parsed at once."
  (let ((input string) (again t))
    (while again
      (setq again (eq (catch 'agent-bridge--deferred
                        (funcall filter proc input)
                        nil)
                      'deferred)
            input ""))))

(defun agent-bridge--start ()
  "Start the bridge and send `initialize'; return the connection."
  (let* ((argv (agent-bridge--argv))
         (process-environment (append agent-bridge-environment process-environment))
         (conn (jsonrpc-process-connection
                :name "agent-bridge"
                :process (lambda ()
                           (make-process
                            :name "agent-bridge"
                            :command argv
                            :connection-type 'pipe
                            :coding 'utf-8-emacs-unix
                            :noquery t
                            :stderr (get-buffer-create "*agent-bridge stderr*")))
                :request-dispatcher #'agent-bridge--dispatch-request
                :notification-dispatcher #'agent-bridge--dispatch-notification
                :on-shutdown #'agent-bridge--on-shutdown)))
    (add-function :around (process-filter (jsonrpc--process conn))
                  #'agent-bridge--defer-filter)
    (setq agent-bridge--connection conn
          agent-bridge--ready nil)
    (jsonrpc-async-request
     conn :initialize
     (list :protocolVersion 1
           :clientInfo (list :name "agent-bridge.el" :version "0.1.0")
           :capabilities (list :interactions (list :approval t :question t
                                                   :questionSet t)))
     :success-fn (lambda (_result)
                   (jsonrpc-notify conn :initialized (make-hash-table))
                   (setq agent-bridge--ready t)
                   (let ((waiting (reverse agent-bridge--waiting)))
                     (setq agent-bridge--waiting nil)
                     (dolist (fn waiting) (funcall fn conn))))
     :error-fn (lambda (err)
                 (agent-bridge--message "initialize failed: %s"
                                        (agent-bridge-format-error err))))
    conn))

(defun agent-bridge--on-shutdown (conn)
  "Forget CONN, the bridge connection that ended."
  (when (eq conn agent-bridge--connection)
    (setq agent-bridge--connection nil
          agent-bridge--ready nil
          agent-bridge--waiting nil)
    (maphash (lambda (_id s) (setf (agent-bridge--session-pending s) nil))
             agent-bridge--sessions)))

(defun agent-bridge--with-connection (fn)
  "Call FN with the ready bridge connection, starting the bridge if needed."
  ;; A connection whose process ended but whose sentinel has not run yet is
  ;; forgotten now: its `agent-bridge--on-shutdown', running later (possibly
  ;; while the next bridge starts), must not drop FN from the new one's queue.
  (when (and agent-bridge--connection (not (jsonrpc-running-p agent-bridge--connection)))
    (agent-bridge--on-shutdown agent-bridge--connection))
  (if (and agent-bridge--connection (jsonrpc-running-p agent-bridge--connection))
      (if agent-bridge--ready
          (funcall fn agent-bridge--connection)
        (push fn agent-bridge--waiting))
    (push fn agent-bridge--waiting)
    (condition-case err
        (agent-bridge--start)
      (file-error
       (setq agent-bridge--waiting nil)
       (user-error "Could not start agent-bridge: %s"
                   (error-message-string err))))))

(defun agent-bridge--call (method params &optional on-result on-error)
  "Send METHOD with PARAMS asynchronously; call ON-RESULT with the result.
An error is shown (by its `data.code'); ON-ERROR is also called with it."
  (agent-bridge--with-connection
   (lambda (conn)
     (jsonrpc-async-request
      conn method (or params (make-hash-table))
      :success-fn (lambda (result) (when on-result (funcall on-result result)))
      :error-fn (lambda (err)
                  (agent-bridge--message "%s failed: %s" method
                                         (agent-bridge-format-error err))
                  (when on-error (funcall on-error err)))
      :timeout 60))))

;;;; Sessions

(defun agent-bridge--session (id &optional info)
  "Return the state of session ID (created on first sight), updated from INFO."
  (let ((s (or (gethash id agent-bridge--sessions)
               (puthash id (agent-bridge--session-make :id id) agent-bridge--sessions))))
    (when info
      (setf (agent-bridge--session-provider s)
            (or (plist-get info :providerId) (agent-bridge--session-provider s))
            (agent-bridge--session-title s)
            (or (plist-get info :title) (agent-bridge--session-title s))
            (agent-bridge--session-state s)
            (or (plist-get info :state) (agent-bridge--session-state s))
            (agent-bridge--session-workspace s)
            (or (plist-get info :workspace) (agent-bridge--session-workspace s))
            (agent-bridge--session-active-run s) (plist-get info :activeRunId)))
    s))

(defun agent-bridge--current-session ()
  "Return the session of the current chat buffer, else the one used last."
  (let ((id (or agent-bridge--session-id agent-bridge--current)))
    (and id (gethash id agent-bridge--sessions))))

(defun agent-bridge-pending-count (s)
  "Return how many interactions wait for an answer in session S."
  (length (agent-bridge--session-pending s)))

;;;; The chat buffer

(defvar agent-bridge-chat-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'agent-bridge-toggle-block)
    (define-key map (kbd "p") #'agent-bridge-prompt)
    (define-key map (kbd "i") #'agent-bridge-input)
    (define-key map (kbd "C-c C-c") #'agent-bridge-cancel)
    (define-key map (kbd "a") #'agent-bridge-approvals)
    (define-key map (kbd "d") #'agent-bridge-diff)
    (define-key map (kbd "l") #'agent-bridge-log)
    (define-key map (kbd "f") #'agent-bridge-fork)
    (define-key map (kbd "m") #'agent-bridge-settings)
    (define-key map (kbd "?") #'agent-bridge-chat-menu)
    (define-key map (kbd "/") #'agent-bridge-command)
    (define-key map (kbd "M-n") #'agent-bridge-next-button)
    (define-key map (kbd "M-p") #'agent-bridge-previous-button)
    (define-key map (kbd "C-c C-n") #'agent-bridge-next-interaction)
    (define-key map (kbd "C-c C-p") #'agent-bridge-previous-interaction)
    map)
  "Keymap of `agent-bridge-chat-mode'.")

(defvar agent-bridge--font-lock-keywords
  '(("^#+ .*$" . font-lock-function-name-face)
    ("^▸ .*$" . font-lock-keyword-face)
    ("^  │ .*$" . font-lock-comment-face)
    ("^\\? .*$" . font-lock-warning-face)
    ("^→ .*$" . font-lock-string-face)
    ("^✓ .*$" . 'success)               ; a face form: evaluated, so quoted
    ("^✗ .*$" . 'error)
    ("^[—!] .*$" . font-lock-doc-face))
  "What `agent-bridge-chat-mode' highlights.")

(define-derived-mode agent-bridge-chat-mode special-mode "Agent-Bridge"
  "A session's chat: the run's events as they stream.
Thinking and tool calls are blocks whose header starts with \"▸ \";
their bodies are folded, TAB toggles the block at point.
\\<agent-bridge-chat-mode-map>A pending approval or question is a \"? \" line with its
answers as buttons under it.  \\[agent-bridge-next-button] and \\[agent-bridge-previous-button] move to the
next or previous answer button, \\[agent-bridge-next-interaction] and \\[agent-bridge-previous-interaction] to the
first button of the next or previous pending interaction (both wrap
around); RET on a button answers with it.

\\{agent-bridge-chat-mode-map}"
  (setq-local buffer-invisibility-spec '((agent-bridge-fold . t)))
  (setq-local font-lock-defaults '(agent-bridge--font-lock-keywords t))
  (setq-local header-line-format '(:eval (agent-bridge--header-line)))
  (setq-local truncate-lines nil))

(defcustom agent-bridge-input-height 5
  "Lines of the prompt area below a chat (`agent-bridge-input')."
  :type 'integer)

(defvar agent-bridge-input-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-bridge-input-send)
    (define-key map (kbd "C-j") #'newline)
    (define-key map (kbd "S-<return>") #'newline)
    (define-key map (kbd "C-c C-c") #'agent-bridge-cancel)
    map)
  "Keymap of `agent-bridge-input-mode'.")

(define-derived-mode agent-bridge-input-mode text-mode "Agent-Bridge-Input"
  "The prompt area below a chat: write a prompt, RET sends it.
\[newline] starts a new line of the same prompt; \[agent-bridge-cancel]
interrupts the run.

\{agent-bridge-input-mode-map}"
  (setq-local header-line-format '(:eval (agent-bridge--input-header-line)))
  (add-hook 'completion-at-point-functions #'agent-bridge--complete-command nil t))

(defun agent-bridge--input-header-line ()
  "Return the prompt area's header line: what is attached, and its keys."
  (let* ((s (agent-bridge--current-session))
         (context (and s (agent-bridge--session-context s))))
    (string-replace
     "%" "%%"
     (concat " prompt"
             (if context
                 (concat " with " (mapconcat #'agent-bridge--describe-block context ", "))
               "")
             " · RET sends · C-j new line · C-c C-c interrupts"))))

(defun agent-bridge-input ()
  "Write a prompt in the prompt area below the current session's chat.
The area (a small window under the chat) is created and shown as needed,
and selected.  Return its buffer."
  (interactive)
  (let* ((s (agent-bridge--require-session))
         (id (agent-bridge--session-id s))
         (chat (agent-bridge--buffer s))
         (buf (get-buffer-create (format "*agent-bridge input %s*" id)))
         (win (get-buffer-window buf)))
    (with-current-buffer buf
      (unless (derived-mode-p 'agent-bridge-input-mode)
        (agent-bridge-input-mode))
      (setq agent-bridge--session-id id))
    (unless win
      (let ((chat-win (or (get-buffer-window chat) (selected-window))))
        (setq win (split-window chat-win (- agent-bridge-input-height) 'below))
        (set-window-buffer win buf)))
    (select-window win)
    buf))

(defun agent-bridge-input-send ()
  "Send the prompt area's text as a prompt to its session, and clear it."
  (interactive)
  (let ((text (string-trim (buffer-substring-no-properties (point-min) (point-max)))))
    (if (string-empty-p text)
        (agent-bridge--message "nothing to send: write a prompt first")
      (erase-buffer)
      (agent-bridge-prompt text))))

(defun agent-bridge--header-line ()
  "Return the chat buffer's header line.
It shows the provider, the model and mode chosen for the session, its
title, run state and pending count."
  (let ((s (agent-bridge--current-session)))
    (if (not s)
        ""
      (let ((n (agent-bridge-pending-count s)))
        (string-replace
         "%" "%%"
         (string-join
          (delq nil
                (append
                 (list " agent-bridge"
                       (agent-bridge--session-provider s))
                 (agent-bridge--session-chosen s)
                 (list
                  (or (agent-bridge--session-title s) (agent-bridge--session-id s))
                  (cond ((agent-bridge--session-active-run s) "running")
                        ((equal (agent-bridge--session-state s) "closed") "closed")
                        (t "idle"))
                  (and (> n 0) (format "%d pending %s" n
                                       (if (= n 1) "approval" "approvals")))
                  (agent-bridge--limits-summary s))))
          " · "))))))

(defun agent-bridge--buffer (s)
  "Return the chat buffer of session S (created on first use)."
  (let ((buf (agent-bridge--session-buffer s)))
    (if (buffer-live-p buf)
        buf
      (setq buf (get-buffer-create (format "*agent-bridge %s*" (agent-bridge--session-id s))))
      (with-current-buffer buf
        (agent-bridge-chat-mode)
        (setq agent-bridge--session-id (agent-bridge--session-id s))
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (format "# agent-bridge · %s · %s"
                          (or (agent-bridge--session-title s)
                              (agent-bridge--session-provider s) "")
                          (agent-bridge--session-id s)))))
      (setf (agent-bridge--session-buffer s) buf
            (agent-bridge--session-blocks s) nil
            (agent-bridge--session-tail s) nil)
      buf)))

(defun agent-bridge--append (s lines &optional tail)
  "Append LINES (strings) to the chat of S; TAIL is what the last line is."
  (with-current-buffer (agent-bridge--buffer s)
    (let ((inhibit-read-only t) (end (point-max)))
      (save-excursion
        (goto-char (point-max))
        (dolist (line lines) (insert "\n" line)))
      (setf (agent-bridge--session-tail s) tail)
      (agent-bridge--follow end))))

(defvar-local agent-bridge--followed nil
  "Where the chat ended when its windows last followed it (a marker).
Text inserted at the end without following (thinking as it streams)
leaves a window's point there.")

(defun agent-bridge--follow (end)
  "Keep the windows showing the current buffer at its end.
END is where the buffer ended before the text just added.  A window
whose point was at the end (or where the end was when the windows last
followed) goes to the new end; one whose point the user moved elsewhere
\(e.g. to a button) stays."
  (let ((last (and agent-bridge--followed (marker-position agent-bridge--followed))))
    (dolist (win (get-buffer-window-list (current-buffer) nil t))
      (when (or (>= (window-point win) end) (eql (window-point win) last))
        (set-window-point win (point-max)))))
  (if agent-bridge--followed
      (set-marker agent-bridge--followed (point-max))
    (setq agent-bridge--followed (copy-marker (point-max)))))

(defun agent-bridge--stream (s text kind)
  "Append streamed TEXT of KIND (`text' or `thinking') to the chat of S."
  (unless (eq (agent-bridge--session-tail s) kind)
    (if (eq kind 'thinking)
        (progn (agent-bridge--block s 'thinking "thinking")
               (agent-bridge--block-body s 'thinking (list "")))
      (agent-bridge--append s (list ""))))
  (if (eq kind 'thinking)
      (agent-bridge--block-extend s 'thinking text)
    (with-current-buffer (agent-bridge--buffer s)
      (let ((inhibit-read-only t) (end (point-max)))
        (save-excursion (goto-char (point-max)) (insert text))
        (agent-bridge--follow end))))
  (setf (agent-bridge--session-tail s) kind))

(defun agent-bridge--block (s key header)
  "Start block KEY in the chat of S with HEADER; its body is folded."
  (agent-bridge--append s (list (concat "▸ " header)))
  (with-current-buffer (agent-bridge--buffer s)
    (let* ((start (copy-marker (save-excursion (goto-char (point-max))
                                               (line-beginning-position))))
           (end (copy-marker (point-max)))
           (ov (make-overlay (point-max) (point-max))))
      (overlay-put ov 'invisible 'agent-bridge-fold)
      (overlay-put ov 'agent-bridge-block t)
      (setf (alist-get key (agent-bridge--session-blocks s) nil nil #'equal)
            (list start end ov)))))

(defun agent-bridge--block-body (s key lines)
  "Add body LINES to block KEY of S (after its last line)."
  (let ((b (alist-get key (agent-bridge--session-blocks s) nil nil #'equal)))
    (if (not b)
        (agent-bridge--append s (mapcar (lambda (l) (concat "  │ " l)) lines))
      (with-current-buffer (agent-bridge--buffer s)
        (let* ((inhibit-read-only t) (end (nth 1 b)) (ov (nth 2 b))
               ;; a window at the buffer's end: still there after text inserted at
               ;; its end, moved along to the new end by text inserted before it
               (old-end (if (< end (point-max)) nil (point-max))))
          (save-excursion
            (goto-char end)
            (dolist (line lines) (insert "\n  │ " line))
            (set-marker end (point))
            (move-overlay ov (overlay-start ov) end)
            (when (= end (point-max)) (setf (agent-bridge--session-tail s) nil)))
          (agent-bridge--follow (or old-end (point-max))))))))

(defun agent-bridge--block-extend (s key text)
  "Append TEXT (it may hold newlines) to the last body line of block KEY of S."
  (let ((b (alist-get key (agent-bridge--session-blocks s) nil nil #'equal)))
    (with-current-buffer (agent-bridge--buffer s)
      (let ((inhibit-read-only t) (end (nth 1 b)) (ov (nth 2 b)))
        (save-excursion
          (goto-char end)
          (insert (string-replace "\n" "\n  │ " text))
          (set-marker end (point))
          (move-overlay ov (overlay-start ov) end))))))

(defun agent-bridge--block-header (s key header)
  "Rewrite the header line of block KEY of S to HEADER.
A call folded under a subagent's call is a line of that call's body."
  (let ((b (alist-get key (agent-bridge--session-blocks s) nil nil #'equal)))
    (when b
      (with-current-buffer (agent-bridge--buffer s)
        (let ((inhibit-read-only t))
          (save-excursion
            ;; Insert the new text first, then delete the old: deleting first put
            ;; the fold overlay's start (at the header's end) at the line's start,
            ;; so the header folded away with the body and only "..." showed.
            (goto-char (nth 0 b))
            (let ((old (- (line-end-position) (point))))
              (insert (if (nth 3 b) "  │ ↳ " "▸ ") header)
              (delete-region (point) (+ (point) old)))))))))

(defun agent-bridge-toggle-block ()
  "Fold or unfold the thinking or tool-call block at point."
  (interactive)
  (let ((ov (seq-find (lambda (o) (overlay-get o 'agent-bridge-block))
                      (overlays-in (line-beginning-position) (1+ (line-end-position))))))
    (when ov
      (overlay-put ov 'invisible (if (overlay-get ov 'invisible) nil 'agent-bridge-fold)))))

(defun agent-bridge-show (s)
  "Show the chat buffer of session S."
  (let ((buf (agent-bridge--buffer s)))
    (pop-to-buffer buf)
    buf))

;;;; Events

(defun agent-bridge--lines (text)
  "Return TEXT split into lines (no trailing empty line)."
  (let ((lines (split-string (or text "") "\n")))
    (if (and (cdr lines) (equal (car (last lines)) ""))
        (butlast lines)
      lines)))

(defun agent-bridge--describe (request)
  "Return a one-line description of interaction REQUEST."
  (pcase (plist-get request :kind)
    ("approval"
     (let ((what (or (plist-get request :title) (plist-get request :action) "approval"))
           (command (plist-get request :command)))
       (if (and command (not (string-search command what)))
           (format "%s — %s" what command)
         what)))
    ("question" (or (plist-get request :prompt) "question"))
    (_ (or (plist-get request :title) "questions"))))

(defun agent-bridge--answer-summary (answer)
  "Return a short text for ANSWER."
  (pcase (plist-get answer :kind)
    ("approval" (let ((mode (or (plist-get answer :mode)
                                ;; the protocol's default: allowed once
                                (and (equal (plist-get answer :decision) "allow") "once"))))
                  (concat (plist-get answer :decision) (if mode (format " (%s)" mode) ""))))
    ("question" (or (plist-get answer :choice) (plist-get answer :text) ""))
    ("questionSet"
     (let ((answers (plist-get answer :answers)) parts)
       (while answers
         (push (format "%s=%s" (substring (symbol-name (car answers)) 1) (cadr answers)) parts)
         (setq answers (cddr answers)))
       (string-join (sort parts #'string<) ", ")))
    (_ "")))

(defvar agent-bridge--tools (make-hash-table :test #'equal)
  "Tool call id -> plist of what is known of it (name, title, input, status).")

(defun agent-bridge--tool-header (p)
  "Return the header line of the tool call in payload P."
  (let* ((id (plist-get p :toolCallId))
         (tool (gethash id agent-bridge--tools)))
    (dolist (key '(:name :title :input :exitCode :subagent))
      (when (plist-get p key)
        (setq tool (plist-put tool key (plist-get p key)))))
    (setq tool (plist-put tool :status (plist-get p :status)))
    (puthash id tool agent-bridge--tools)
    (let* ((input (plist-get tool :input))
           (what (or (plist-get tool :title)
                     (and (listp input) (or (plist-get input :command)
                                            (plist-get input :file_path)))))
           (status (plist-get tool :status))
           (status (if (member status '("started" "output")) "running" status))
           (agent (plist-get tool :subagent)))
      (if agent
          (agent-bridge--subagent-header tool agent status)
        (format "tool %s%s [%s%s]" (or (plist-get tool :name) "?")
                (if what (format ": %s" what) "")
                status
                (if (plist-get tool :exitCode)
                    (format ", exit %s" (plist-get tool :exitCode))
                  ""))))))

(defun agent-bridge--subagent-header (tool agent status)
  "Return the header of TOOL, the call running subagent AGENT, in STATUS.
It names the agent's type and task, its own status and what it used."
  (let* ((usage (plist-get agent :usage))
         (uses (plist-get usage :toolUses))
         (tokens (plist-get usage :totalTokens)))
    (format "subagent %s%s [%s%s%s]"
            (or (plist-get agent :agentType) (plist-get tool :name) "?")
            (let ((what (or (plist-get agent :description) (plist-get tool :title))))
              (if what (format ": %s" what) ""))
            (or (plist-get agent :status) status)
            (if uses (format ", %s tool %s" uses (if (eql uses 1) "use" "uses")) "")
            (if tokens (format ", %s tokens" tokens) ""))))

(defun agent-bridge--child (s key parent-key header)
  "Show the call KEY of S, made inside the subagent of PARENT-KEY, as HEADER.
It is a line in the body of the outermost call's block (so it folds
with it), rewritten in place as the call goes on.  Return the key of
the block the line is in, or nil when PARENT-KEY has no block."
  (let* ((blocks (agent-bridge--session-blocks s))
         (b (alist-get key blocks nil nil #'equal))
         (parent (alist-get parent-key blocks nil nil #'equal))
         (root (and parent (or (nth 3 parent) parent-key))))
    (cond (b (agent-bridge--block-header s key header) (nth 3 b))
          ((not root) nil)
          (t (agent-bridge--block-body s root (list (concat "↳ " header)))
             (let ((end (nth 1 (alist-get root blocks nil nil #'equal))))
               (with-current-buffer (agent-bridge--buffer s)
                 (setf (alist-get key (agent-bridge--session-blocks s) nil nil #'equal)
                       (list (copy-marker (save-excursion (goto-char end)
                                                          (line-beginning-position)))
                             nil nil root))))
             root))))

(defun agent-bridge--edit-line (s key item)
  "Keep edit ITEM of S and add its line to block KEY."
  (setf (agent-bridge--session-edits s)
        (append (agent-bridge--session-edits s) (list item)))
  (agent-bridge--block-body
   s key (list (format "edit %s (%s) — M-x agent-bridge-diff %d"
                       (plist-get item :path)
                       (if (plist-get item :oldText) "changed" "new file")
                       (length (agent-bridge--session-edits s))))))

(defun agent-bridge--tool-body (s key p)
  "Add the output and content of tool.activity P to block KEY of S."
  (when (plist-get p :output)
    (agent-bridge--block-body s key (agent-bridge--lines (plist-get p :output))))
  (seq-doseq (item (plist-get p :content))
    (pcase (plist-get item :type)
      ("edit" (agent-bridge--edit-line s key item))
      ("text" (agent-bridge--block-body
               s key (agent-bridge--lines (plist-get item :text)))))))

;;;; Context

(defun agent-bridge--describe-block (block &optional root)
  "Return the chat's line for BLOCK of a run's input (not its text), or nil.
E.g. \"@ src/main.py:2-4\" for a file's lines, its path relative to
ROOT (a directory; default: the current buffer's)."
  (pcase (plist-get block :type)
    ("file" (concat "@ " (file-relative-name (plist-get block :path)
                                             (and root (file-name-as-directory root)))
                    (if (plist-get block :startLine)
                        (format ":%s-%s" (plist-get block :startLine)
                                (or (plist-get block :endLine) (plist-get block :startLine)))
                      "")))
    ("resource" (let ((n (length (agent-bridge--lines (plist-get block :text)))))
                  (format "@ %s (%d %s)" (or (plist-get block :uri) "text") n
                          (if (= n 1) "line" "lines"))))
    ("image" (concat "@ image "
                     (if (plist-get block :path)
                         (file-relative-name (plist-get block :path)
                                             (and root (file-name-as-directory root)))
                       (or (plist-get block :mimeType) "?"))
                     (if (plist-get block :size)
                         (format " (%s bytes)" (plist-get block :size))
                       "")))
    ("command" (concat "/" (plist-get block :name)
                       (if (member (plist-get block :arguments) '(nil ""))
                           ""
                         (concat " " (plist-get block :arguments)))))))

(defconst agent-bridge--image-types
  '(("png" . "image/png") ("jpg" . "image/jpeg") ("jpeg" . "image/jpeg")
    ("gif" . "image/gif") ("webp" . "image/webp"))
  "The image files `agent-bridge-send' sends as images: extension, MIME type.")

(defun agent-bridge--image-block (file workspace)
  "Return the `image' block for image FILE, or nil when FILE is not one.
Inside WORKSPACE it is named by its path (the bridge reads it);
elsewhere its bytes go inline, base64 with its MIME type."
  (let ((type (cdr (assoc (downcase (or (file-name-extension file) ""))
                          agent-bridge--image-types))))
    (when type
      (if (and workspace (file-in-directory-p file workspace))
          (list :type "image" :path (expand-file-name file) :mimeType type)
        (list :type "image" :mimeType type
              :data (with-temp-buffer
                      (set-buffer-multibyte nil)
                      (insert-file-contents-literally file)
                      (base64-encode-region (point-min) (point-max) t)
                      (buffer-string)))))))

(defun agent-bridge--context-block (beg end ranged)
  "Return the input block for the current buffer's text from BEG to END.
RANGED non-nil: a selection (its lines are named), else the whole file.
A buffer visiting a file saved on disk gives a `file' block (the agent
reads the file itself); any other (unsaved, or no file) a `resource'
block holding the text."
  (if (and buffer-file-name (not (buffer-modified-p)) (file-readable-p buffer-file-name))
      (append (list :type "file" :path (expand-file-name buffer-file-name))
              (when ranged
                (list :startLine (line-number-at-pos beg t)
                      ;; a region ending at a line's start ends on the line before
                      :endLine (line-number-at-pos
                                (if (and (> end beg) (save-excursion (goto-char end) (bolp)))
                                    (1- end)
                                  end)
                                t))))
    (list :type "resource"
          :text (buffer-substring-no-properties beg end)
          :uri (if buffer-file-name
                   (concat "file://" (expand-file-name buffer-file-name))
                 (format "untitled:%s" (buffer-name))))))

(defun agent-bridge--run-input (text context &optional commands)
  "Return the run input for prompt TEXT with the blocks CONTEXT attached.
TEXT \"/NAME ARGUMENTS\" where NAME is one of COMMANDS (the session's) is
a `command' block."
  (let* ((command (and (string-match "\\`/\\([^ \t\n]+\\)[ \t\n]*\\(\\(?:.\\|\n\\)*\\)\\'" text)
                       (seq-find (lambda (c) (equal (plist-get c :name) (match-string 1 text)))
                                 commands)
                       (append (list :type "command" :name (match-string 1 text))
                               (let ((args (string-trim (match-string 2 text))))
                                 (unless (string-empty-p args) (list :arguments args)))))))
    (if (or command context)
        (list :content (vconcat (list (or command (list :type "text" :text text))) context))
      (list :text text))))

(defun agent-bridge--load-commands (s)
  "Read the commands of session S (`session/commands')."
  (agent-bridge--call 'session/commands (list :sessionId (agent-bridge--session-id s))
                      (lambda (result)
                        (setf (agent-bridge--session-commands s)
                              (append (plist-get result :commands) nil)))))

(defun agent-bridge--complete-command ()
  "Complete a slash command of the session at the start of the prompt area.
For `completion-at-point-functions'."
  (let ((s (agent-bridge--current-session)))
    (when (and s (agent-bridge--session-commands s)
               (save-excursion (goto-char (point-min)) (looking-at "/")))
      (let ((end (save-excursion (goto-char (point-min))
                                 (skip-chars-forward "^ \t\n")
                                 (point))))
        (when (<= (point) end)
          (let ((commands (agent-bridge--session-commands s)))
            (list (point-min) end
                  (mapcar (lambda (c) (concat "/" (plist-get c :name))) commands)
                  :annotation-function
                  (lambda (name)
                    (let ((c (seq-find (lambda (c) (equal (concat "/" (plist-get c :name)) name))
                                       commands)))
                      (concat (if (plist-get c :hint) (concat " " (plist-get c :hint)) "")
                              (if (plist-get c :description)
                                  (concat "  " (plist-get c :description))
                                ""))))
                  :exit-function (lambda (_ status)
                                   (when (eq status 'finished) (insert " "))))))))))

(defun agent-bridge-command (name &optional arguments)
  "Run the current session's command NAME with ARGUMENTS.
NAME is one of the provider's slash commands or skills.
Interactively, pick it among those the provider offers
\(`session/commands', kept current by `commands.updated'), then type
its arguments."
  (interactive
   (let* ((s (agent-bridge--require-session))
          (commands (agent-bridge--session-commands s)))
     (unless commands
       (user-error "%s offers no commands (yet)" (agent-bridge--session-provider s)))
     (let* ((labels (mapcar (lambda (c)
                              (cons (concat "/" (plist-get c :name)
                                            (if (plist-get c :description)
                                                (concat " — " (plist-get c :description))
                                              ""))
                                    c))
                            commands))
            (c (cdr (assoc (completing-read "Command: " labels nil t) labels))))
       (list (plist-get c :name)
             (read-string (format "/%s %s" (plist-get c :name) (or (plist-get c :hint) "")))))))
  (let ((s (agent-bridge--require-session)))
    (agent-bridge--start-run
     s (concat "/" name (if (member arguments '(nil "")) "" (concat " " arguments))) nil)))

;;;###autoload
(defun agent-bridge-send (&optional text)
  "Send the region, else the current file, as context to the current session.
A file saved on disk goes as a `file' block naming it (and the region's
lines), an unsaved buffer as a `resource' block with its text, an image
file (PNG, JPEG, GIF, WebP) as an `image' block: by its path inside the
session's workspace, else its bytes.  With
TEXT (asked interactively) a run starts at once with it; with an empty
TEXT the context is attached to the next prompt (the prompt area's
header line lists what is attached)."
  (interactive)
  (when (derived-mode-p 'agent-bridge-chat-mode 'agent-bridge-input-mode)
    (user-error "Send from a file's buffer (its region or the whole file)"))
  (let* ((s (agent-bridge--require-session))
         (ranged (use-region-p))
         (block (or (and buffer-file-name (not (buffer-modified-p))
                         (file-readable-p buffer-file-name)
                         (agent-bridge--image-block buffer-file-name
                                                    (agent-bridge--session-workspace s)))
                    (agent-bridge--context-block (if ranged (region-beginning) (point-min))
                                                 (if ranged (region-end) (point-max))
                                                 ranged)))
         (text (or text (read-string (format "Prompt with %s (empty: attach to the next prompt): "
                                             (agent-bridge--describe-block block))))))
    (deactivate-mark)
    (if (string-empty-p text)
        (progn
          (setf (agent-bridge--session-context s)
                (append (agent-bridge--session-context s) (list block)))
          (force-mode-line-update t)
          (agent-bridge--message "%s attached to the next prompt"
                                 (agent-bridge--describe-block block)))
      (agent-bridge--start-run s text (list block)))))

;;;; Limits

(defun agent-bridge--reset-words (iso)
  "Return when ISO (an ISO 8601 time) is, in local words, e.g. \"today 17:00\"."
  (let* ((time (ignore-errors (parse-iso8601-time-string iso)))
         (day (lambda (tm) (format-time-string "%F" tm))))
    (cond ((not time) iso)
          ((equal (funcall day time) (funcall day nil))
           (format-time-string "today %H:%M" time))
          ((equal (funcall day time) (funcall day (time-add nil 86400)))
           (format-time-string "tomorrow %H:%M" time))
          (t (format-time-string "%a %-d %b %H:%M" time)))))

(defun agent-bridge--meter-text (m)
  "Return a short text for limits meter M: pool, meter, percent, reset."
  (concat (format "%s %s" (plist-get m :pool) (plist-get m :meter))
          (if (plist-get m :percent)
              (format " %s%%" (let ((pc (plist-get m :percent)))
                                (if (= pc (round pc)) (round pc) pc)))
            "")
          (if (member (plist-get m :status) '("warning" "exhausted"))
              (format " %s" (plist-get m :status))
            "")
          (if (plist-get m :resetsAt)
              (format ", resets %s" (agent-bridge--reset-words (plist-get m :resetsAt)))
            "")))

(defun agent-bridge--limits-summary (s)
  "Return the header line's limits part for S: its fullest meter, or nil."
  (let (best)
    (dolist (entry (agent-bridge--session-limits s))
      (when (> (or (plist-get (cdr entry) :percent) -1)
               (or (plist-get best :percent) -1))
        (setq best (cdr entry))))
    (and best (concat "limit " (agent-bridge--meter-text best)))))

(defun agent-bridge--limit-failure (error)
  "Return what a run that failed with ERROR (a limit) should add: when it lifts."
  (let* ((details (plist-get error :details))
         (cause (plist-get details :cause))
         (reset (plist-get details :resetsAt))
         (after (plist-get details :retryAfterSeconds)))
    (when (member cause '("rate_limited" "quota_exhausted"))
      (concat (if (equal cause "rate_limited") " — rate limited" " — quota exhausted")
              (cond (reset (format "; resets %s" (agent-bridge--reset-words reset)))
                    (after (format "; retry after %s s (%s)" after
                                   (format-time-string "%H:%M" (time-add nil after))))
                    (t ""))))))

(defun agent-bridge--render (s e p)
  "Render payload P of event E into the chat of session S."
  (pcase (plist-get p :type)
    ("run.started"
     (setf (agent-bridge--session-active-run s) (plist-get e :runId))
     (agent-bridge--append s (append '("" "## You") (agent-bridge--lines (plist-get p :input))
                                     (delq nil (mapcar
                                                (lambda (b)
                                                  (agent-bridge--describe-block
                                                   b (agent-bridge--session-workspace s)))
                                                (plist-get p :content)))))
     (agent-bridge--append s '("" "## Agent")))
    ("text.delta" (agent-bridge--stream s (agent-bridge--message-part s e (plist-get p :text)) 'text))
    ("thinking.delta" (agent-bridge--stream s (plist-get p :text) 'thinking))
    ("tool.activity"
     (let* ((key (concat "tool:" (plist-get p :toolCallId)))
            (parent (plist-get p :parentToolCallId))
            (root (and parent (agent-bridge--child s key (concat "tool:" parent)
                                                   (agent-bridge--tool-header p)))))
       (cond
        (root
         ;; a call inside a subagent: its line is enough; its edits go in the block
         (seq-doseq (item (plist-get p :content))
           (when (equal (plist-get item :type) "edit")
             (agent-bridge--edit-line s root item))))
        ((alist-get key (agent-bridge--session-blocks s) nil nil #'equal)
         (agent-bridge--block-header s key (agent-bridge--tool-header p))
         (agent-bridge--tool-body s key p))
        (t
         (agent-bridge--block s key (agent-bridge--tool-header p))
         (when (plist-get p :input)
           (agent-bridge--block-body
            s key (list (concat "input: " (json-serialize (plist-get p :input)
                                                         :null-object nil
                                                         :false-object :json-false)))))
         (agent-bridge--tool-body s key p)))))
    ("plan.updated"
     (agent-bridge--append
      s (cons "Plan:"
              (mapcar (lambda (step)
                        (format "  %s %s"
                                (pcase (plist-get step :status)
                                  ("completed" "[x]") ("inProgress" "[~]") (_ "[ ]"))
                                (plist-get step :text)))
                      (plist-get p :steps)))))
    ("diagnostic"
     (agent-bridge--append s (list (format "! %s %s: %s" (or (plist-get p :level) "info")
                                           (or (plist-get p :code) "")
                                           (or (plist-get p :message) "")))))
    ("interaction.requested"
     (let ((request (plist-get p :request)))
       (setf (alist-get (plist-get p :interactionId) (agent-bridge--session-pending s)
                        nil nil #'equal)
             request)
       (agent-bridge--append s (list (agent-bridge--pending-line
                                      (plist-get p :interactionId) request)
                                     (agent-bridge--buttons-line
                                      (plist-get p :interactionId) request)))))
    ("interaction.settled"
     (setf (agent-bridge--session-pending s)
           (assoc-delete-all (plist-get p :interactionId) (agent-bridge--session-pending s)))
     (agent-bridge--remove-buttons s (plist-get p :interactionId))
     (let ((summary (agent-bridge--answer-summary (plist-get p :answer))))
       (agent-bridge--append
        s (list (concat "→ " (or (plist-get p :status) "settled")
                        (if (string-empty-p summary) "" (concat ": " summary))
                        (if (eq (plist-get p :auto) t) " (by the bridge)" ""))))))
    ("run.completed"
     (setf (agent-bridge--session-active-run s) nil)
     (push (plist-get e :runId) (agent-bridge--session-ended s))
     (agent-bridge--append s (list (agent-bridge--run-end
                                    e (concat "✓ done" (if (plist-get p :stopReason)
                                                          (format " (%s)" (plist-get p :stopReason))
                                                        ""))))))
    ("run.failed"
     (setf (agent-bridge--session-active-run s) nil)
     (push (plist-get e :runId) (agent-bridge--session-ended s))
     (agent-bridge--append s (list (agent-bridge--run-end
                                    e (concat "✗ failed: "
                                              (agent-bridge-format-error
                                               (list :data (plist-get p :error)))
                                              (agent-bridge--limit-failure
                                               (plist-get p :error)))))))
    ("limits.updated"
     (seq-doseq (m (plist-get p :meters))
       (setf (alist-get (cons (plist-get m :pool) (plist-get m :meter))
                        (agent-bridge--session-limits s) nil nil #'equal)
             m))
     (seq-doseq (m (plist-get p :meters))
       (when (member (plist-get m :status) '("warning" "exhausted"))
         (agent-bridge--append s (list (concat "! limit " (agent-bridge--meter-text m)))))))
    ("run.interrupted"
     (setf (agent-bridge--session-active-run s) nil)
     (push (plist-get e :runId) (agent-bridge--session-ended s))
     (agent-bridge--append s (list (agent-bridge--run-end
                                    e (format "✗ interrupted (%s%s)" (or (plist-get p :reason) "user")
                                              (if (eq (plist-get p :forced) t) ", forced" ""))))))
    ("session.closed"
     (setf (agent-bridge--session-state s) "closed"
           (agent-bridge--session-active-run s) nil
           (agent-bridge--session-pending s) nil)
     (agent-bridge--append s (list (format "— session closed (%s)" (or (plist-get p :reason) "closed")))))
    ("session.resumed"
     (setf (agent-bridge--session-state s) "active")
     (agent-bridge--append s '("— session resumed")))
    ("commands.updated"
     (setf (agent-bridge--session-commands s) (append (plist-get p :commands) nil)))
    ("settings.updated"
     (let ((words (delq nil (list (and (plist-get p :model)
                                       (format "model %s" (plist-get p :model)))
                                  (and (plist-get p :mode)
                                       (format "mode %s" (plist-get p :mode)))))))
       (when words
         (setf (agent-bridge--session-chosen s) words)
         (agent-bridge--append s (list (concat "— " (string-join words " · ")))))))
    ("session.imported"
     (agent-bridge--append
      s (list (format "— imported from %s's own session (%s %s)"
                      (plist-get p :provider) (plist-get p :records)
                      (if (eql (plist-get p :records) 1) "record" "records")))))))

(defun agent-bridge--message-part (s e text)
  "Return TEXT, a delta (event E) of an agent message in the chat of S, marked.
The text of one message carries the sequence of its first delta
\(`agent-bridge-message'), each delta its own (`agent-bridge-message-seq'):
`agent-bridge-fork' forks at a message's last one."
  (let* ((seq (plist-get e :sequence))
         (id (or (and (eq (agent-bridge--session-tail s) 'text)
                      (with-current-buffer (agent-bridge--buffer s)
                        (and (> (point-max) (point-min))
                             (get-text-property (1- (point-max)) 'agent-bridge-message))))
                 seq)))
    (propertize (or text "") 'agent-bridge-message id 'agent-bridge-message-seq seq)))

(defun agent-bridge--run-end (e line)
  "Return LINE, the end of a run, marked with the sequence of its event E.
`agent-bridge-fork' forks there."
  (propertize line 'agent-bridge-seq (plist-get e :sequence)))

(defun agent-bridge--on-event (e)
  "Apply event envelope E to its session (each sequence once, in order)."
  (let* ((s (agent-bridge--session (plist-get e :sessionId)))
         (seq (plist-get e :sequence)))
    (unless (and seq (<= seq (agent-bridge--session-last-seq s)))
      (when seq (setf (agent-bridge--session-last-seq s) seq))
      (agent-bridge--render s e (plist-get e :payload))
      (force-mode-line-update t))))

(defun agent-bridge--dispatch-notification (_conn method params)
  "Handle the bridge's notification METHOD with PARAMS."
  (pcase method
    ('event (agent-bridge--on-event params))
    ;; The bridge withdraws an interaction/request once it is settled; what is
    ;; pending follows the interaction.* events.
    ('$/cancelRequest nil)
    ('journal/status
     (unless (equal (plist-get params :state) "ok")
       (agent-bridge--message "journal %s (%s)" (plist-get params :state)
                              (plist-get params :reason))))))

;;;; Interactions

(defun agent-bridge--dispatch-request (_conn method params)
  "Handle the bridge's request METHOD with PARAMS.
An `interaction/request' is queued for the prompt and answered later
through `interaction/respond' (the bridge then withdraws its request),
so the prompt is never shown inside the process filter."
  (unless (eq method 'interaction/request)
    (signal 'jsonrpc-error '((jsonrpc-error-code . -32601)
                             (jsonrpc-error-message . "method not found"))))
  (let* ((s (agent-bridge--session (plist-get params :sessionId)))
         (iid (plist-get params :interactionId)))
    (unless (assoc iid (agent-bridge--session-pending s))
      (push (cons iid (plist-get params :request)) (agent-bridge--session-pending s)))
    (force-mode-line-update t)
    (agent-bridge--message "%s pending in %s: `a' there answers it"
                           (plist-get (plist-get params :request) :kind)
                           (buffer-name (agent-bridge--buffer s)))
    (throw 'agent-bridge--deferred 'deferred)))

(defun agent-bridge--pending-line (iid request)
  "Return the chat line of pending interaction IID (REQUEST): a button.
RET or a click on it answers it through `agent-bridge-approvals'."
  (let* ((parent (plist-get request :parentToolCallId))
         (agent (and parent (plist-get (gethash parent agent-bridge--tools) :subagent)))
         (line (format "? %s: %s%s" (plist-get request :kind) (agent-bridge--describe request)
                       (cond (agent (format " (subagent %s)"
                                            (or (plist-get agent :agentType) "")))
                             (parent " (subagent)")
                             (t "")))))
    ;; a copy of LINE with the button's properties (Emacs 28 copies a string)
    (make-text-button line nil
                      'agent-bridge-interaction iid
                      'action (lambda (button)
                                (agent-bridge-approvals
                                 (get-text-property button 'agent-bridge-interaction)))
                      'follow-link t
                      'help-echo "RET or mouse-1: answer (C-g, ESC or q: not now)")))

(defun agent-bridge--button-choices (request)
  "Return the buttons for interaction REQUEST, each (LABEL ANSWER).
ANSWER is the wire answer, or a function that asks for it (free text,
a question set) and returns it, nil when dismissed."
  (pcase (plist-get request :kind)
    ("approval"
     (mapcar (lambda (c) (list (agent-bridge--capitalize (nth 1 c)) (nth 2 c)))
             (agent-bridge--approval-choices request)))
    ("question"
     (let ((choices (append (plist-get request :choices) nil)))
       (append
        (mapcar (lambda (c) (list (or (plist-get c :label) (plist-get c :id))
                                  (list :kind "question" :choice (plist-get c :id))))
                choices)
        (when (or (null choices) (eq (plist-get request :allowFreeText) t))
          (list (list (if choices "Other…" "Answer…")
                      (lambda ()
                        (let ((text (agent-bridge--read-text
                                     (concat (or (plist-get request :prompt) "Answer") " "))))
                          (and text (list :kind "question" :text text))))))))))
    (_ (list (list "Answer…" (lambda () (agent-bridge-ask request)))))))

(defun agent-bridge--capitalize (text)
  "Return TEXT with its first letter upcased."
  (if (string-empty-p text) text (concat (upcase (substring text 0 1)) (substring text 1))))

(defun agent-bridge--buttons-line (iid request)
  "Return the line of answer buttons for pending interaction IID (REQUEST).
Each button answers it at once (RET or a click on it: a deliberate act on
that button, no other key does); the line goes when the interaction is
settled."
  (let ((line (mapconcat
               (lambda (choice)
                 (make-text-button (concat "[" (car choice) "]") nil
                                   'agent-bridge-answer (cadr choice)
                                   'agent-bridge-interaction iid
                                   'action #'agent-bridge--answer-button
                                   'follow-link t
                                   'help-echo "RET or mouse-1: answer so"))
               (agent-bridge--button-choices request)
               " ")))
    (propertize (concat "  " line) 'agent-bridge-answers iid)))

(defun agent-bridge--answer-button (button)
  "Answer the interaction of BUTTON (a pressed answer button) with its answer."
  (let* ((iid (get-text-property button 'agent-bridge-interaction))
         (answer (get-text-property button 'agent-bridge-answer))
         (s (agent-bridge--current-session)))
    (if (not (and s (assoc iid (agent-bridge--session-pending s))))
        (agent-bridge--message "already answered")
      (let ((answer (if (functionp answer) (funcall answer) answer)))
        (when answer
          (agent-bridge--call 'interaction/respond
                              (list :interactionId iid :answer answer)))))))

;;;; Moving between the answer buttons

(defun agent-bridge--answer-buttons ()
  "Return the answer buttons of the current chat, in order.
Each is (START . INTERACTION-ID); only a pending interaction has them."
  (let ((pos (point-min)) buttons)
    (while (setq pos (next-single-property-change pos 'agent-bridge-answer))
      (when (get-text-property pos 'agent-bridge-answer)
        (push (cons pos (get-text-property pos 'agent-bridge-interaction)) buttons)))
    (nreverse buttons)))

(defun agent-bridge--goto-answer (buttons forward limit)
  "Go to the first of BUTTONS after LIMIT (FORWARD) or the last before it.
BUTTONS are (START . INTERACTION-ID); past the last (first) one it wraps
around.  Say which button point is on and what it answers."
  (let* ((found (if forward
                    (seq-find (lambda (b) (> (car b) limit)) buttons)
                  (car (last (seq-filter (lambda (b) (< (car b) limit)) buttons)))))
         (target (or found (if forward (car buttons) (car (last buttons))))))
    (if (not target)
        (agent-bridge--message "no pending approvals or questions")
      (goto-char (car target))
      (let* ((s (agent-bridge--current-session))
             (request (and s (cdr (assoc (cdr target) (agent-bridge--session-pending s))))))
        (agent-bridge--message "%s%s%s — RET answers"
                               (buffer-substring-no-properties
                                (car target)
                                (next-single-property-change (car target) 'agent-bridge-answer
                                                             nil (line-end-position)))
                               (if request
                                   (format " (%s: %s)" (plist-get request :kind)
                                           (agent-bridge--describe request))
                                 "")
                               (if found "" ", wrapped around"))))))

(defun agent-bridge--button-start ()
  "Return the start of the answer button at point, else point."
  (if (and (get-text-property (point) 'agent-bridge-answer) (> (point) (point-min))
           (get-text-property (1- (point)) 'agent-bridge-answer))
      (previous-single-property-change (point) 'agent-bridge-answer nil (point-min))
    (point)))

(defun agent-bridge-next-button ()
  "Move to the next answer button of a pending approval or question.
Past the last one it wraps around to the first.  RET on it answers."
  (interactive)
  (agent-bridge--goto-answer (agent-bridge--answer-buttons) t (point)))

(defun agent-bridge-previous-button ()
  "Move to the previous answer button of a pending approval or question.
Before the first one it wraps around to the last.  RET on it answers."
  (interactive)
  (agent-bridge--goto-answer (agent-bridge--answer-buttons) nil (agent-bridge--button-start)))

(defun agent-bridge--first-buttons ()
  "Return the first answer button of each pending interaction in the chat."
  (let (last firsts)
    (dolist (b (agent-bridge--answer-buttons))
      (unless (equal (cdr b) last) (push b firsts))
      (setq last (cdr b)))
    (nreverse firsts)))

(defun agent-bridge-next-interaction ()
  "Move to the first answer button of the next pending approval or question.
Past the last one it wraps around to the first.  RET on it answers."
  (interactive)
  (agent-bridge--goto-answer (agent-bridge--first-buttons) t
                             (if (get-text-property (point) 'agent-bridge-answers)
                                 (line-end-position)
                               (point))))

(defun agent-bridge-previous-interaction ()
  "Move to the first answer button of the previous pending approval or question.
Before the first one it wraps around to the last.  RET on it answers."
  (interactive)
  (agent-bridge--goto-answer (agent-bridge--first-buttons) nil
                             (if (get-text-property (point) 'agent-bridge-answers)
                                 (line-beginning-position)
                               (point))))

(defun agent-bridge--remove-buttons (s iid)
  "Remove the answer buttons of interaction IID from the chat of S."
  (with-current-buffer (agent-bridge--buffer s)
    (let ((inhibit-read-only t))
      (save-excursion
        (goto-char (point-min))
        (let ((match (text-property-search-forward 'agent-bridge-answers iid t)))
          (when match
            ;; the line and the newline before it
            (delete-region (1- (prop-match-beginning match)) (prop-match-end match))))))))

(defun agent-bridge--read-key-choice (prompt choices)
  "Ask PROMPT, one key picking one of CHOICES, each (KEY NAME VALUE).
Return the VALUE picked, or nil when dismissed: \\[keyboard-quit],
ESC, q or any other key dismiss (the question stays where it was,
nothing is answered)."
  (let* ((text (concat prompt "("
                       (mapconcat (lambda (c) (format "%s %s" (single-key-description (car c))
                                                      (nth 1 c)))
                                  choices ", ")
                       ", C-g/q dismiss): "))
         (key (condition-case nil
                  (let ((inhibit-quit nil)) (read-key text))
                (quit ?\C-g)))
         (choice (and (not (memq key '(?q ?\C-g ?\e escape))) (assq key choices))))
    (unless choice (agent-bridge--message "dismissed: it stays pending"))
    (nth 2 choice)))

(defun agent-bridge--approval-choices (request)
  "Return the choices for approval REQUEST's modes, each (KEY NAME ANSWER)."
  (let ((modes (append (or (plist-get request :modes) ["once"]) nil))
        choices)
    (when (member "once" modes)
      (push (list ?o "allow once" (list :kind "approval" :decision "allow" :mode "once"))
            choices))
    (when (member "session" modes)
      (push (list ?s "allow for session"
                  (list :kind "approval" :decision "allow" :mode "session"))
            choices))
    (push (list ?d "deny" (list :kind "approval" :decision "deny")) choices)
    (nreverse choices)))

(defun agent-bridge--read-text (prompt)
  "Read a free-text answer to PROMPT; nil when quit or empty."
  (let ((text (condition-case nil
                  (let ((inhibit-quit nil)) (read-string prompt))
                (quit nil))))
    (if (or (null text) (string-empty-p text))
        (progn (agent-bridge--message "dismissed: it stays pending") nil)
      text)))

(defun agent-bridge--ask-one (q title)
  "Ask question Q (prompt, choices, allowFreeText) under TITLE.
Return (choice-id . nil), (nil . text), or nil when dismissed."
  (let ((choices (append (plist-get q :choices) nil))
        (prompt (concat title (or (plist-get q :prompt) ""))))
    (if (null choices)
        (let ((text (agent-bridge--read-text (concat prompt " "))))
          (and text (cons nil text)))
      (let* ((keys (string-to-list "123456789abcefghijklmnoprstuvwxyz"))
             (items (cl-loop for c in choices for k in keys
                             collect (list k (or (plist-get c :label) (plist-get c :id))
                                           (plist-get c :id))))
             (items (if (eq (plist-get q :allowFreeText) t)
                        (append items (list (list ?\s "other…" 'free-text)))
                      items))
             (picked (agent-bridge--read-key-choice (concat prompt " ") items)))
        (cond ((eq picked 'free-text)
               (let ((text (agent-bridge--read-text (concat (plist-get q :prompt) " "))))
                 (and text (cons nil text))))
              (picked (cons picked nil)))))))

(defun agent-bridge-ask (request)
  "Ask the user interaction REQUEST; return the wire answer, nil when dismissed.
Approvals offer the request's modes, one key each."
  (pcase (plist-get request :kind)
    ("approval"
     (agent-bridge--read-key-choice
      (concat "agent-bridge approval: " (agent-bridge--describe request) " ")
      (agent-bridge--approval-choices request)))
    ("question"
     (let ((a (agent-bridge--ask-one request "agent-bridge question: ")))
       (cond ((car a) (list :kind "question" :choice (car a)))
             ((cdr a) (list :kind "question" :text (cdr a))))))
    ("questionSet"
     (let ((items (append (plist-get request :items) nil)) (i 0) answers)
       (catch 'dismissed
         (dolist (item items)
           (cl-incf i)
           (let ((a (agent-bridge--ask-one
                     item (format "agent-bridge %s (%d/%d): "
                                  (or (plist-get request :title) "questions") i (length items)))))
             (unless a (throw 'dismissed nil))
             (setq answers (plist-put answers (intern (concat ":" (plist-get item :key)))
                                      (or (car a) (cdr a))))))
         (list :kind "questionSet" :answers answers))))))

;;;; Commands

(defun agent-bridge--option (provider names)
  "Return PROVIDER's session option named one of NAMES, or nil."
  (seq-find (lambda (o) (and (equal (plist-get o :scope) "session")
                             (member (plist-get o :name) names)))
            (plist-get provider :options)))

(defun agent-bridge--read-option (option title)
  "Read a value for OPTION (an enum: completion over its values) under TITLE.
Return nil for the default."
  (when option
    (let ((value (if (equal (plist-get option :type) "enum")
                     (completing-read (format "%s (empty: default): " title)
                                      (append (plist-get option :values) nil) nil t)
                   (read-string (format "%s (empty: default): " title)))))
      (unless (string-empty-p value) value))))

(defun agent-bridge--describe-provider (p)
  "Return a label for provider descriptor P, with its availability."
  (let ((a (plist-get p :availability)))
    (concat (plist-get p :id)
            (if (and a (not (equal (plist-get a :status) "available")))
                (format " — %s%s" (plist-get a :status)
                        (if (plist-get a :reason) (concat ": " (plist-get a :reason)) ""))
              ""))))

(defun agent-bridge--chosen (provider options)
  "Return the model and mode in OPTIONS for PROVIDER, as header words.
E.g. (\"model sonnet\" \"permissionMode plan\")."
  (let ((mode (agent-bridge--option provider '("mode" "permissionMode" "approvalPolicy"))))
    (delq nil
          (list (and (plist-get options :model)
                     (format "model %s" (plist-get options :model)))
                (and mode
                     (plist-get options (intern (concat ":" (plist-get mode :name))))
                     (format "%s %s" (plist-get mode :name)
                             (plist-get options (intern (concat ":" (plist-get mode :name))))))))))

(defun agent-bridge--workspace ()
  "Return the workspace of a session created from the current buffer.
In a chat or its prompt area, the workspace of its session; else the
buffer's project root (`project-current'), else its directory."
  (let ((s (and (derived-mode-p 'agent-bridge-chat-mode 'agent-bridge-input-mode)
                (agent-bridge--current-session))))
    (or (and s (agent-bridge--session-workspace s))
        (let ((project (project-current)))
          (directory-file-name
           (file-truename (if project (project-root project) default-directory)))))))

(defun agent-bridge--create (provider options title &optional workspace)
  "Create a session on PROVIDER (a descriptor) with OPTIONS and TITLE; show it.
WORKSPACE is its directory (default: the current buffer's, see
`agent-bridge--workspace'): the files its prompts refer to are there.
The chat buffer is shown at once, before the bridge answers, so that keys
typed next go to it (not to the buffer the command was run from)."
  (let ((a (plist-get provider :availability)))
    ;; (an executable or command given here was not part of the availability probe)
    (if (and (equal (plist-get a :status) "unavailable")
             (not (plist-get options :executable))
             (not (plist-get options :command)))
        (agent-bridge--message "%s is not available: %s%s" (plist-get provider :id)
                               (or (plist-get a :reason) "not installed")
                               (if (plist-get a :nextStep)
                                   (concat " — next step: " (plist-get a :nextStep))
                                 ""))
      (let ((placeholder (generate-new-buffer "*agent-bridge (starting)*")))
        (with-current-buffer placeholder
          (agent-bridge-chat-mode)
          (setq agent-bridge--starting t)
          (let ((inhibit-read-only t))
            (insert (format "# agent-bridge · %s · starting…" (plist-get provider :id)))))
        (pop-to-buffer placeholder)
        (agent-bridge--call
         'session/create
         (append (list :provider (plist-get provider :id)
                       :workspace (or workspace (agent-bridge--workspace)))
                 (and options (list :options options))
                 (and title (not (string-empty-p title)) (list :title title)))
         (lambda (result)
           (let* ((info (plist-get result :session))
                  (id (plist-get info :sessionId))
                  (s (agent-bridge--session id info)))
             (setf (agent-bridge--session-chosen s) (agent-bridge--chosen provider options))
             ;; the placeholder becomes the chat buffer (`agent-bridge--buffer' finds
             ;; it by its name and sets it up)
             (when (and (buffer-live-p placeholder)
                        (not (buffer-live-p (agent-bridge--session-buffer s))))
               (with-current-buffer placeholder
                 (rename-buffer (format "*agent-bridge %s*" id) t)))
             (setq agent-bridge--current id)
             (agent-bridge--load-commands s)
             ;; Set the chat up where it is shown; select nothing from here (this runs
             ;; from the process filter: selecting a window would take the keyboard
             ;; from a minibuffer the user is typing in, e.g. the first prompt).
             (let ((buf (agent-bridge--buffer s)))
               (unless (get-buffer-window buf 'visible)
                 (display-buffer buf)))))
         (lambda (err)
           (when (buffer-live-p placeholder)
             (with-current-buffer placeholder
               (setq agent-bridge--starting nil)
               (let ((inhibit-read-only t))
                 (goto-char (point-max))
                 (insert "\n! session/create failed: " (agent-bridge-format-error err)))))))))))

(defun agent-bridge--read-value (option)
  "Read a value for OPTION (a descriptor) by its type.
Return the value as the bridge takes it, or nil for none."
  (let* ((name (plist-get option :name))
         (type (plist-get option :type))
         (prompt (format "%s (%s): " name type))
         (text (if (member type '("enum" "boolean"))
                   (completing-read prompt (if (equal type "enum")
                                               (append (plist-get option :values) nil)
                                             '("true" "false"))
                                    nil t)
                 (read-string prompt))))
    (cond ((string-empty-p text) nil)
          ((equal type "boolean") (if (equal text "true") t :false))
          ((member type '("integer" "number"))
           (if (string-match-p "\\`-?[0-9.]+\\'" text)
               (string-to-number text)
             (user-error "Option %s wants a number, not %S" name text)))
          ((equal type "stringList")
           (vconcat (split-string text "[ \t]*,[ \t]*" t)))
          ((equal type "json")
           (condition-case nil
               (json-parse-string text :object-type 'plist :null-object nil :false-object :false)
             (json-parse-error (user-error "Option %s wants JSON, not %S" name text))))
          (t text))))

(defun agent-bridge--read-more-options (provider asked)
  "Read further session options of PROVIDER, one at a time, until an empty answer.
ASKED names the options already asked.  Return them as a plist."
  (let ((more (seq-filter (lambda (o) (and (equal (plist-get o :scope) "session")
                                            (not (member (plist-get o :name) asked))))
                          (append (plist-get provider :options) nil)))
        opts)
    (while more
      (let* ((labels (mapcar (lambda (o) (cons (plist-get o :name) o)) more))
             (name (completing-read "More session options (empty: done): "
                                    labels nil t))
             (option (cdr (assoc name labels))))
        (if (not option)
            (setq more nil)
          (let ((value (agent-bridge--read-value option)))
            (when value
              (setq opts (plist-put opts (intern (concat ":" name)) value))))
          (setq more (delq option more)))))
    opts))

;;;; The new session's menu

(defcustom agent-bridge-use-transient t
  "Non-nil: a new session's options are set in a transient menu.
nil: they are read one after another with `completing-read'."
  :type 'boolean)

(defvar agent-bridge--draft nil
  "The session being set up in `agent-bridge-session-menu'.
A plist (:provider DESCRIPTOR :options PLIST :title STRING).")

(defun agent-bridge--draft-get (name)
  "Return the value of option NAME in the session being set up, or nil."
  (plist-get (plist-get agent-bridge--draft :options) (intern (concat ":" name))))

(defun agent-bridge--draft-set (name value)
  "Set option NAME to VALUE in the session being set up (nil: its default)."
  (let ((key (intern (concat ":" name)))
        (options (plist-get agent-bridge--draft :options))
        kept)
    (while options
      (unless (eq (car options) key)
        (setq kept (append kept (list (car options) (cadr options)))))
      (setq options (cddr options)))
    (setq agent-bridge--draft
          (plist-put agent-bridge--draft :options
                     (if value (append kept (list key value)) kept)))))

(defun agent-bridge--value-text (value)
  "Return a short text for option VALUE."
  (cond ((eq value t) "true")
        ((eq value :false) "false")
        ((stringp value) value)
        ((vectorp value) (mapconcat (lambda (v) (format "%s" v)) value ","))
        ((numberp value) (number-to-string value))
        (t (json-serialize value :false-object :false))))

(defun agent-bridge--menu-mode-option ()
  "Return the mode option of the provider being set up, or nil."
  (agent-bridge--option (plist-get agent-bridge--draft :provider)
                        '("mode" "permissionMode" "approvalPolicy")))

(defun agent-bridge--menu-model-option ()
  "Return the model option of the provider being set up, or nil."
  (agent-bridge--option (plist-get agent-bridge--draft :provider) '("model")))

(defun agent-bridge--menu-other-options ()
  "Return the other session options of the provider being set up."
  (let ((mode (agent-bridge--menu-mode-option)))
    (seq-filter (lambda (o) (and (equal (plist-get o :scope) "session")
                                 (not (equal (plist-get o :name) "model"))
                                 (not (and mode (equal (plist-get o :name)
                                                       (plist-get mode :name))))))
                (append (plist-get (plist-get agent-bridge--draft :provider) :options) nil))))

(defun agent-bridge--menu-value (name)
  "Return the text the menu gives for the value of option NAME."
  (let ((value (agent-bridge--draft-get name)))
    (if value (agent-bridge--value-text value) (propertize "default" 'face 'shadow))))

(defun agent-bridge--menu-heading ()
  "Return the heading of `agent-bridge-session-menu'."
  (format "New %s session" (plist-get (plist-get agent-bridge--draft :provider) :id)))

(defun agent-bridge--menu-model-label ()
  "Return the menu's model line."
  (format "Model           %s" (agent-bridge--menu-value "model")))

(defun agent-bridge--menu-mode-label ()
  "Return the menu's mode line."
  (let ((name (plist-get (agent-bridge--menu-mode-option) :name)))
    (format "%-15s %s" name (agent-bridge--menu-value name))))

(defun agent-bridge--menu-other-label ()
  "Return the menu's line of the other options: those set so far."
  (let ((set (delq nil (mapcar (lambda (o)
                                 (let ((name (plist-get o :name)))
                                   (and (agent-bridge--draft-get name)
                                        (format "%s=%s" name (agent-bridge--menu-value name)))))
                               (agent-bridge--menu-other-options)))))
    (format "Other options   %s" (if set (string-join set " ")
                                   (propertize "none set" 'face 'shadow)))))

(defun agent-bridge--menu-title-label ()
  "Return the menu's title line."
  (let ((title (plist-get agent-bridge--draft :title)))
    (format "Title           %s" (if (and title (not (string-empty-p title)))
                                     title
                                   (propertize "none" 'face 'shadow)))))

(defun agent-bridge-menu-model ()
  "Choose the model of the session being set up (empty: the default)."
  (interactive)
  (agent-bridge--draft-set "model" (agent-bridge--read-option
                                    (agent-bridge--menu-model-option) "Model"))
  (agent-bridge--menu-again))

(defun agent-bridge-menu-mode ()
  "Choose the mode of the session being set up (empty: the default)."
  (interactive)
  (let ((option (agent-bridge--menu-mode-option)))
    (agent-bridge--draft-set (plist-get option :name)
                             (agent-bridge--read-option option (plist-get option :name))))
  (agent-bridge--menu-again))

(defun agent-bridge-menu-other ()
  "Set another declared option of the session being set up (empty: unset it)."
  (interactive)
  (let* ((labels (mapcar (lambda (o)
                           (cons (format "%s (%s)%s" (plist-get o :name) (plist-get o :type)
                                         (if (agent-bridge--draft-get (plist-get o :name))
                                             (concat " = " (agent-bridge--menu-value
                                                            (plist-get o :name)))
                                           ""))
                                 o))
                         (agent-bridge--menu-other-options)))
         (option (cdr (assoc (completing-read "Session option: " labels nil t) labels))))
    (when option
      (agent-bridge--draft-set (plist-get option :name) (agent-bridge--read-value option))))
  (agent-bridge--menu-again))

(defun agent-bridge-menu-title ()
  "Set the title of the session being set up."
  (interactive)
  (setq agent-bridge--draft
        (plist-put agent-bridge--draft :title
                   (read-string "Title (optional): " (plist-get agent-bridge--draft :title))))
  (agent-bridge--menu-again))

(defun agent-bridge--menu-again ()
  "Show `agent-bridge-session-menu' again, with what was set so far.
Each of its lines leaves the menu to read its value (a transient
suffix that stays while the minibuffer is read breaks in transient
0.3.7), then comes back here."
  (when agent-bridge--draft
    (transient-setup 'agent-bridge-session-menu)))

(defun agent-bridge-menu-create ()
  "Create the session set up in the menu, and open its chat."
  (interactive)
  (let ((draft agent-bridge--draft))
    (setq agent-bridge--draft nil)
    (if (not draft)
        (user-error "No session being set up: M-x agent-bridge-new-session")
      (agent-bridge--create (plist-get draft :provider) (plist-get draft :options)
                            (plist-get draft :title) (plist-get draft :workspace)))))

(transient-define-prefix agent-bridge-session-menu ()
  "The options of a new session (`agent-bridge-new-session'), then create it.
Each line sets one: the model and mode (from their declared values),
any other option the provider declares (read by its type), the title;
RET creates the session."
  [:description agent-bridge--menu-heading
   ("m" agent-bridge-menu-model :description agent-bridge--menu-model-label
    :if agent-bridge--menu-model-option)
   ("o" agent-bridge-menu-mode :description agent-bridge--menu-mode-label
    :if agent-bridge--menu-mode-option)
   ("x" agent-bridge-menu-other :description agent-bridge--menu-other-label
    :if agent-bridge--menu-other-options)
   ("t" agent-bridge-menu-title :description agent-bridge--menu-title-label)]
  [("RET" "Create the session" agent-bridge-menu-create)
   ("q" "Quit" transient-quit-one)])

(defun agent-bridge--options-menu (provider &optional workspace)
  "Set up a new session on PROVIDER (a descriptor) in `agent-bridge-session-menu'.
WORKSPACE is its directory."
  (setq agent-bridge--draft (list :provider provider :options nil :title nil
                                  :workspace workspace))
  (transient-setup 'agent-bridge-session-menu))

;;;###autoload
(defun agent-bridge-new-session (&optional provider-id options title)
  "Create a session and open its chat buffer.
Interactively, pick the provider from `providers/list', then set
its model, mode, any other session option it declares and a title in
`agent-bridge-session-menu' (a transient menu; RET there creates the
session), or, when `agent-bridge-use-transient' is nil, one after
another (each read by its type; an empty answer ends).  From Lisp,
PROVIDER-ID, OPTIONS (a plist of session options) and TITLE skip the
pickers.  The session's workspace is the current buffer's project (or
its directory): the files its prompts refer to are there."
  (interactive)
  (let ((workspace (agent-bridge--workspace)))
    (agent-bridge--new-session provider-id options title workspace)))

(defun agent-bridge--new-session (provider-id options title workspace)
  "Go on with `agent-bridge-new-session' in WORKSPACE.
PROVIDER-ID, OPTIONS and TITLE as there."
  (agent-bridge--call
   'providers/list (list :probe t)
   (lambda (result)
     (setq agent-bridge--providers (append (plist-get result :providers) nil))
     (let* ((providers agent-bridge--providers)
            (provider
             (if provider-id
                 (seq-find (lambda (p) (equal (plist-get p :id) provider-id)) providers)
               (let* ((labels (mapcar (lambda (p) (cons (agent-bridge--describe-provider p) p))
                                      providers))
                      (label (completing-read "agent-bridge provider: " labels nil t)))
                 (cdr (assoc label labels))))))
       (cond
        ((null provider)
         (agent-bridge--message "no provider %S" provider-id))
        ;; an unavailable provider is refused at once, before any other question
        ((or provider-id (equal (plist-get (plist-get provider :availability) :status)
                                "unavailable"))
         (agent-bridge--create provider options title workspace))
        (agent-bridge-use-transient
         (agent-bridge--options-menu provider workspace))
        (t
         (let* ((model (agent-bridge--read-option
                        (agent-bridge--option provider '("model")) "Model"))
                (mode-option (agent-bridge--option
                              provider '("mode" "permissionMode" "approvalPolicy")))
                (mode (agent-bridge--read-option mode-option "Mode"))
                (opts (append (and model (list :model model))
                              (and mode (list (intern (concat ":" (plist-get mode-option :name)))
                                              mode))
                              (agent-bridge--read-more-options
                               provider (list "model" (plist-get mode-option :name))))))
           (agent-bridge--create provider opts (read-string "Title (optional): ")
                                 workspace))))))))

(defun agent-bridge--require-session ()
  "Return the current session or signal `user-error'.
In a chat whose session is still being created, wait (at most 30 s) for it:
keys typed right after `agent-bridge-new-session' act on the new session."
  (let ((deadline (+ (float-time) 30)))
    (while (and agent-bridge--starting (< (float-time) deadline))
      (accept-process-output nil 0.05)))
  (or (agent-bridge--current-session)
      (user-error "No agent-bridge session: M-x agent-bridge-new-session or agent-bridge-sessions")))

;;;###autoload
(defun agent-bridge-prompt (text)
  "Start a run with TEXT in the current session.
The context attached by `agent-bridge-send' goes with it."
  (interactive (list (read-string "agent-bridge prompt: ")))
  (let ((s (agent-bridge--require-session)))
    (unless (string-empty-p text)
      (let ((context (agent-bridge--session-context s)))
        (setf (agent-bridge--session-context s) nil)
        (agent-bridge--start-run s text context)))))

(defun agent-bridge--start-run (s text context)
  "Start a run of session S with prompt TEXT and the blocks CONTEXT.
Refused, CONTEXT is attached to the next prompt again."
  (agent-bridge--call 'run/start
                      (list :sessionId (agent-bridge--session-id s)
                            :input (agent-bridge--run-input
                                    text context (agent-bridge--session-commands s)))
                      (lambda (result)
                        ;; The reply may come after the run's events, even its end.
                        (unless (member (plist-get result :runId)
                                        (agent-bridge--session-ended s))
                          (setf (agent-bridge--session-active-run s)
                                (plist-get result :runId))))
                      (lambda (_err)
                        (setf (agent-bridge--session-context s)
                              (append context (agent-bridge--session-context s))))))

;;;###autoload
(defun agent-bridge-cancel ()
  "Interrupt the current session's run."
  (interactive)
  (let ((s (agent-bridge--require-session)))
    (if (not (agent-bridge--session-active-run s))
        (agent-bridge--message "no run to cancel")
      (agent-bridge--call 'run/interrupt
                          (list :runId (agent-bridge--session-active-run s) :reason "user")))))

(defun agent-bridge--fork-point ()
  "Return the sequence of the end of the run at point (or of the run before)."
  (let* ((from (line-beginning-position))
         (next (if (get-text-property from 'agent-bridge-seq)
                   from
                 (next-single-property-change from 'agent-bridge-seq)))
         (prev (previous-single-property-change from 'agent-bridge-seq)))
    (cond (next (get-text-property next 'agent-bridge-seq))
          ((and prev (> prev (point-min))) (get-text-property (1- prev) 'agent-bridge-seq)))))

(defun agent-bridge--message-fork-point ()
  "Return the sequence of the last delta of the agent message on this line, or nil."
  (let ((pos (text-property-not-all (line-beginning-position) (line-end-position)
                                    'agent-bridge-message nil)))
    (when pos
      (let ((end (or (next-single-property-change pos 'agent-bridge-message) (point-max))))
        (get-text-property (1- end) 'agent-bridge-message-seq)))))

(defun agent-bridge--with-provider (id fn)
  "Call FN with the descriptor of provider ID (nil when there is none).
The descriptors are read with `providers/list' once."
  (let ((find (lambda () (seq-find (lambda (p) (equal (plist-get p :id) id))
                                   agent-bridge--providers))))
    (if (funcall find)
        (funcall fn (funcall find))
      (agent-bridge--call 'providers/list nil
                          (lambda (result)
                            (setq agent-bridge--providers
                                  (append (plist-get result :providers) nil))
                            (funcall fn (funcall find)))))))

(defun agent-bridge-fork (&optional event)
  "Fork the session at the run at point into a new session, and open it.
The fork (`session/fork') holds the history up to the end of that run
\(the run point is in, else the last run before point) and goes on from
there; the original is unchanged.  Where the provider forks at messages
\(`capabilities.fork' granularity \"message\"), on an agent message it
is made at that message's last event, and with a prefix argument EVENT
at that event.  When the agent's own history is cut earlier (the
reply's `providerSequence'), a message says so.  Only offered where the
provider's descriptor has `capabilities.fork' (else a message says it
cannot)."
  (interactive (list (and current-prefix-arg (prefix-numeric-value current-prefix-arg))))
  (let ((s (agent-bridge--require-session))
        (run-at (agent-bridge--fork-point))
        (message-at (agent-bridge--message-fork-point)))
    (if (not (or event run-at))
        (agent-bridge--message "no ended run here to fork from")
      (agent-bridge--with-provider
       (agent-bridge--session-provider s)
       (lambda (provider)
         (let* ((fork (plist-get (plist-get provider :capabilities) :fork))
                (at (or event
                        (and message-at (equal (plist-get fork :granularity) "message")
                             message-at)
                        run-at)))
           (if (not fork)
               (agent-bridge--message "%s cannot fork a session"
                                      (agent-bridge--session-provider s))
             (agent-bridge--call
              'session/fork (list :sessionId (agent-bridge--session-id s) :atEvent at)
              (lambda (result)
                (agent-bridge-open (plist-get result :session))
                (let ((cut (plist-get result :providerSequence)))
                  (when (and (numberp cut) (< cut at))
                    (agent-bridge--message
                     (concat "the fork shows the history up to event %d, but the agent"
                             " remembers it only up to event %d (its last complete message there)")
                     at cut))))))))))))

(defun agent-bridge-open (info)
  "Open the session described by INFO (a SessionInfo plist) in its chat buffer.
A session this bridge has open is reattached (`session/attach': the
events after the last one shown are replayed and its pending
approvals asked again); any other is resumed (`session/resume')."
  (let* ((s (agent-bridge--session (plist-get info :sessionId) info))
         (method (if (equal (plist-get info :state) "active") 'session/attach 'session/resume)))
    (setq agent-bridge--current (agent-bridge--session-id s))
    (agent-bridge-show s)
    (agent-bridge--call method (list :sessionId (agent-bridge--session-id s)
                                     :after (agent-bridge--session-last-seq s))
                        (lambda (result)
                          (agent-bridge--session (agent-bridge--session-id s)
                                                 (plist-get result :session))
                          (agent-bridge--load-commands s)))))

;;;; Model and mode

(defun agent-bridge--settings-choices (settings)
  "Return the choices in SETTINGS, a `session/settings' result.
Each is (LABEL KEY ID): KEY `:model' or `:mode', ID the value to set."
  (let (choices)
    (dolist (key '(:model :mode))
      (let ((setting (plist-get settings key)))
        (seq-doseq (item (plist-get setting :available))
          (let ((id (plist-get item :id)))
            (push (list (format "%s %s%s%s" (substring (symbol-name key) 1) id
                                (if (and (plist-get item :name)
                                         (not (equal (plist-get item :name) id)))
                                    (format " (%s)" (plist-get item :name))
                                  "")
                                (if (equal id (plist-get setting :current)) " — current" ""))
                        key id)
                  choices)))))
    (nreverse choices)))

(defun agent-bridge-settings ()
  "Choose another model or mode for the current session.
It applies from the next run on.
The choices are those `session/settings' offers; the one picked is set
with `session/configure', and every attached editor shows it."
  (interactive)
  (let* ((s (agent-bridge--require-session))
         (id (agent-bridge--session-id s)))
    (agent-bridge--call
     'session/settings (list :sessionId id)
     (lambda (settings)
       (let ((choices (agent-bridge--settings-choices settings)))
         (if (null choices)
             (agent-bridge--message "%s offers no model or mode to choose"
                                    (agent-bridge--session-provider s))
           (let ((choice (assoc (completing-read "Model or mode: " choices nil t) choices)))
             (when choice
               (agent-bridge--call 'session/configure
                                   (list :sessionId id (nth 1 choice) (nth 2 choice)))))))))))

;;;; The chat's menu

(defvar agent-bridge--chat-settings nil
  "The session of `agent-bridge-chat-menu': (SESSION-ID . SETTINGS).
SETTINGS is the `session/settings' result read when the menu opened.")

(defun agent-bridge--chat-setting (key)
  "Return the setting KEY (`:model' or `:mode') of the chat's menu.
Return nil when the provider offers no choice for it."
  (let ((setting (plist-get (cdr agent-bridge--chat-settings) key)))
    (and (> (length (plist-get setting :available)) 0) setting)))

(defun agent-bridge--chat-item-label (item current)
  "Return the label of setting ITEM (a plist with :id, :name); CURRENT is marked."
  (let ((id (plist-get item :id)))
    (concat id
            (if (and (plist-get item :name) (not (equal (plist-get item :name) id)))
                (format " (%s)" (plist-get item :name))
              "")
            (if (equal id current) " — current" ""))))

(defun agent-bridge--chat-menu-line (key name)
  "Return the chat menu's line for setting KEY, named NAME."
  (let ((setting (agent-bridge--chat-setting key)))
    (format "%-15s %s" name (or (plist-get setting :current)
                                (propertize "the provider's" 'face 'shadow)))))

(defun agent-bridge--chat-menu-heading ()
  "Return the heading of `agent-bridge--chat-menu'."
  (let ((s (agent-bridge--session (car agent-bridge--chat-settings))))
    (format "Session %s (%s)%s"
            (or (agent-bridge--session-title s) (agent-bridge--session-id s))
            (agent-bridge--session-provider s)
            (if (or (agent-bridge--chat-setting :model) (agent-bridge--chat-setting :mode))
                ""
              " · no model or mode to choose"))))

(defun agent-bridge--chat-menu-pick (key name)
  "Pick another value of setting KEY (NAME in the prompt) and set it.
The choices are those `session/settings' offered; the one picked is set
with `session/configure', from the next run on."
  (let* ((id (car agent-bridge--chat-settings))
         (setting (agent-bridge--chat-setting key))
         (current (plist-get setting :current))
         (choices (mapcar (lambda (item)
                            (cons (agent-bridge--chat-item-label item current)
                                  (plist-get item :id)))
                          (plist-get setting :available)))
         (picked (cdr (assoc (completing-read (format "%s: " name) choices nil t) choices))))
    (when (and picked (not (equal picked current)))
      (agent-bridge--call 'session/configure (list :sessionId id key picked)))))

(defun agent-bridge-chat-menu-model ()
  "Choose the model of the session `agent-bridge-chat-menu' was opened on."
  (interactive)
  (agent-bridge--chat-menu-pick :model "Model"))

(defun agent-bridge-chat-menu-mode ()
  "Choose the mode of the session `agent-bridge-chat-menu' was opened on."
  (interactive)
  (agent-bridge--chat-menu-pick :mode "Mode"))

(transient-define-prefix agent-bridge--chat-menu ()
  "The menu of a chat's session (`agent-bridge-chat-menu')."
  [:description agent-bridge--chat-menu-heading
   ("m" agent-bridge-chat-menu-model
    :description (lambda () (agent-bridge--chat-menu-line :model "Model"))
    :if (lambda () (agent-bridge--chat-setting :model)))
   ("o" agent-bridge-chat-menu-mode
    :description (lambda () (agent-bridge--chat-menu-line :mode "Mode"))
    :if (lambda () (agent-bridge--chat-setting :mode)))]
  [["Run"
    ("p" "Prompt" agent-bridge-prompt)
    ("/" "Slash command" agent-bridge-command)
    ("k" "Interrupt" agent-bridge-cancel)]
   ["Session"
    ("f" "Fork at the run (or message) at point" agent-bridge-fork)
    ("d" "Diff of the last edit" agent-bridge-diff)
    ("q" "Quit" transient-quit-one)]])

(defun agent-bridge-chat-menu ()
  "Open the menu of the current session (a transient menu).
It shows the session's model and mode (`session/settings') and switches
them (`m', `o': the choices the provider offers, set with
`session/configure' from the next run on), and runs the chat's other
commands: a prompt, a slash command, an interrupt, a fork, the diff."
  (interactive)
  (let* ((s (agent-bridge--require-session))
         (id (agent-bridge--session-id s))
         (buf (current-buffer)))
    (agent-bridge--call
     'session/settings (list :sessionId id)
     (lambda (settings)
       (when (buffer-live-p buf)
         (with-current-buffer buf
           (setq agent-bridge--chat-settings (cons id settings))
           (transient-setup 'agent-bridge--chat-menu)))))))

;;;; Continue a session

(defun agent-bridge--continue-label (entry)
  "Return the picker's label for ENTRY, (KIND INFO PROVIDER-ID)."
  (let ((info (nth 1 entry)))
    (format "%s · %s · %s · %s"
            (let ((title (or (plist-get info :title) "(untitled)")))
              (if (> (length title) 60) (concat (substring title 0 59) "…") title))
            (if (eq (car entry) 'bridge)
                (format "%s, bridge session" (plist-get info :providerId))
              (format "%s's own session" (nth 2 entry)))
            (or (plist-get info :updatedAt) (plist-get info :createdAt) "")
            (if (eq (car entry) 'bridge)
                (plist-get info :sessionId)
              (let ((ref (plist-get info :sessionRef)))
                (if (> (length ref) 12) (substring ref (- (length ref) 12)) ref))))))

(defun agent-bridge--continue-gather (workspace on-done)
  "Collect the sessions of WORKSPACE, then call ON-DONE with them.
Each is (bridge INFO) for a bridge session (`session/list'), or
\(native INFO PROVIDER-ID) for a provider's own session not held by
one of those (`provider/sessions/list' of every provider that can
list them), newest first."
  (let ((bridge nil) (native nil) (waiting 1))
    (cl-labels
        ((done ()
           (when (= (cl-decf waiting) 0)
             (let* ((held (mapcar (lambda (e) (plist-get (nth 1 e) :sessionId)) bridge))
                    (native (seq-remove (lambda (e) (member (plist-get (nth 1 e) :bridgeSessionId)
                                                            held))
                                        native)))
               (funcall on-done
                        (sort (append bridge native)
                              (lambda (a b)
                                (string> (or (plist-get (nth 1 a) :updatedAt) "")
                                         (or (plist-get (nth 1 b) :updatedAt) "")))))))))
      (agent-bridge--call
       'session/list (list :workspace workspace)
       (lambda (result)
         (setq bridge (mapcar (lambda (info) (list 'bridge info))
                              (append (plist-get result :sessions) nil)))
         (agent-bridge--call
          'providers/list (list :probe t)
          (lambda (result)
            (seq-doseq (p (plist-get result :providers))
              (when (and (equal (plist-get (plist-get (plist-get p :capabilities) :nativeSessions)
                                           :list)
                                "supported")
                         (not (equal (plist-get (plist-get p :availability) :status)
                                     "unavailable")))
                (cl-incf waiting)
                (let ((id (plist-get p :id)))
                  (agent-bridge--call
                   'provider/sessions/list (list :provider id :workspace workspace :limit 50)
                   (lambda (r)
                     (seq-doseq (info (plist-get r :sessions))
                       (push (list 'native info id) native))
                     (done))
                   (lambda (_err) (done))))))
            (done))))))))

;;;###autoload
(defun agent-bridge-continue ()
  "Continue a session of this workspace: one of the bridge's or a provider's own.
The picker offers the bridge's sessions of the current buffer's project
\(or directory), and the sessions the providers keep themselves there
\(made in their own CLI, e.g. `claude' in a terminal; providers that
are not installed are not asked), newest first.  A
bridge session is reopened; a provider's own is continued in the bridge
\(`provider/sessions/continue': its earlier turns are shown, the next
prompt goes on in the provider's own conversation)."
  (interactive)
  (let ((workspace (agent-bridge--workspace)))
    (agent-bridge--continue-gather
     workspace
     (lambda (entries)
       (if (null entries)
           (agent-bridge--message "no sessions of %s to continue" workspace)
         (let* ((labels (mapcar (lambda (e) (cons (agent-bridge--continue-label e) e)) entries))
                (entry (cdr (assoc (completing-read "Continue a session: " labels nil t)
                                   labels))))
           (when entry
             (agent-bridge--continue-entry entry workspace))))))))

(defun agent-bridge--continue-entry (entry workspace)
  "Open ENTRY (see `agent-bridge--continue-gather') of WORKSPACE in its chat."
  (if (eq (car entry) 'bridge)
      (agent-bridge-open (nth 1 entry))
    (agent-bridge--call 'provider/sessions/continue
                        (list :provider (nth 2 entry)
                              :sessionRef (plist-get (nth 1 entry) :sessionRef)
                              :workspace workspace)
                        (lambda (result) (agent-bridge-open (plist-get result :session))))))

(defvar agent-bridge-sessions-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-bridge-sessions-open)
    (define-key map (kbd "g") #'agent-bridge-sessions)
    map)
  "Keymap of `agent-bridge-sessions-mode'.")

(define-derived-mode agent-bridge-sessions-mode tabulated-list-mode "Agent-Bridge-Sessions"
  "The journal's sessions, newest first.  RET opens (reattaches or resumes) one.

\\{agent-bridge-sessions-mode-map}"
  (setq tabulated-list-format [("Title" 24 t) ("Provider" 12 t) ("State" 8 t)
                               ("Pending" 8 t) ("Updated" 20 t) ("Session" 20 t)])
  (tabulated-list-init-header))

;;;###autoload
(defun agent-bridge-sessions (&optional on-listed)
  "List the journal's sessions in a `tabulated-list-mode' buffer.
ON-LISTED, when given, is called with the buffer once it is filled."
  (interactive)
  (agent-bridge--call
   'session/list (make-hash-table)
   (lambda (result)
     (let ((buf (get-buffer-create "*agent-bridge sessions*")))
       (with-current-buffer buf
         (agent-bridge-sessions-mode)
         (setq tabulated-list-entries
               (mapcar (lambda (info)
                         (let* ((id (plist-get info :sessionId))
                                (s (gethash id agent-bridge--sessions)))
                           (list info
                                 (vector (or (plist-get info :title) "(untitled)")
                                         (plist-get info :providerId)
                                         (plist-get info :state)
                                         (number-to-string
                                          ;; after a restart only the bridge knows
                                          (max (if s (agent-bridge-pending-count s) 0)
                                               (or (plist-get info :pendingInteractions) 0)))
                                         (or (plist-get info :updatedAt) "")
                                         id))))
                       (plist-get result :sessions)))
         (tabulated-list-print))
       (pop-to-buffer buf)
       (when on-listed (funcall on-listed buf))))))

(defun agent-bridge-sessions-open ()
  "Open the session at point."
  (interactive)
  (let ((info (tabulated-list-get-id)))
    (when info (agent-bridge-open info))))

;;;###autoload
(defun agent-bridge-approvals (&optional interaction-id)
  "Answer one of the current session's pending approvals or questions.
INTERACTION-ID names it; else the one asked first (with several pending,
picked by name).  Dismissing the prompt (\\[keyboard-quit], ESC, q)
answers nothing: it stays pending."
  (interactive)
  (let* ((s (agent-bridge--require-session))
         (pending (reverse (agent-bridge--session-pending s))))
    (if (null pending)
        (agent-bridge--message "no pending approvals")
      (let* ((labels (mapcar (lambda (p) (cons (agent-bridge--describe (cdr p)) (car p))) pending))
             (iid (cond (interaction-id)
                        ((cdr labels)
                         (cdr (assoc (condition-case nil
                                         (completing-read "Pending: " labels nil t)
                                       (quit nil))
                                     labels)))
                        (t (cdar labels))))
             (request (cdr (assoc iid pending)))
             (answer (and request (agent-bridge-ask request))))
        (cond ((null request)
               (unless (or interaction-id (null iid))
                 (agent-bridge--message "no such pending interaction"))
               (when interaction-id (agent-bridge--message "already answered")))
              (answer
               (agent-bridge--call 'interaction/respond
                                   (list :interactionId iid :answer answer))))))))


(defun agent-bridge--edit (n)
  "Return edit N (1-based; nil: the last) of the current session."
  (let* ((edits (agent-bridge--session-edits (agent-bridge--require-session)))
         (edit (nth (1- (or n (length edits))) edits)))
    (or edit (user-error "No edit %s in this agent-bridge session" (or n "")))))

(defun agent-bridge--edit-buffers (edit)
  "Return (OLD . NEW), buffers holding EDIT's old and new text."
  (let ((path (plist-get edit :path))
        (old (get-buffer-create "*agent-bridge edit (old)*"))
        (new (get-buffer-create "*agent-bridge edit (new)*")))
    (dolist (pair (list (cons old (or (plist-get edit :oldText) ""))
                        (cons new (or (plist-get edit :newText) ""))))
      (with-current-buffer (car pair)
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (cdr pair)))
        (setq-local buffer-file-name nil)
        (rename-buffer (format "*agent-bridge %s %s*" path
                               (if (eq (car pair) old) "(old)" "(new)"))
                       t)))
    (cons old new)))

(defun agent-bridge--diff-header (path)
  "Give the current diff buffer a header naming PATH, as `git diff' does.
`diff-no-select' names the temporary files and buffers it compared (a
`diff -u --label #<buffer ...>' line, `--- #<buffer ...>'); they become
`--- a/PATH' and `+++ b/PATH' (PATH as is when absolute), and its
\"Diff finished\" line goes."
  (let ((inhibit-read-only t))
    (goto-char (point-min))
    (when (looking-at "diff .*\n")
      (delete-region (match-beginning 0) (match-end 0)))
    (let ((rel (not (file-name-absolute-p path))))
      (when (re-search-forward "^--- .*$" nil t)
        (replace-match (concat "--- " (if rel "a/" "") path) t t))
      (when (re-search-forward "^\\+\\+\\+ .*$" nil t)
        (replace-match (concat "+++ " (if rel "b/" "") path) t t)))
    (goto-char (point-max))
    (when (re-search-backward "^Diff finished" nil t)
      (delete-region (point) (point-max))
      (when (looking-back "\n\n" 2)
        (delete-char -1)))
    (goto-char (point-min))
    (insert (format "# edit of %s\n" path))
    (set-buffer-modified-p nil)))

;;;###autoload
(defun agent-bridge-diff (&optional n)
  "Show edit N of the current session (default: the last) in `diff-mode'.
Return the diff buffer."
  (interactive "P")
  (let* ((edit (agent-bridge--edit (and n (prefix-numeric-value n))))
         (bufs (agent-bridge--edit-buffers edit))
         (diff (diff-no-select (car bufs) (cdr bufs) "-u" t
                               (get-buffer-create "*agent-bridge diff*"))))
    (with-current-buffer diff
      (agent-bridge--diff-header (plist-get edit :path)))
    (display-buffer diff)
    diff))

;;;###autoload
(defun agent-bridge-ediff (&optional n)
  "Show edit N of the current session (default: the last) in `ediff'."
  (interactive "P")
  (require 'ediff)
  (let ((bufs (agent-bridge--edit-buffers (agent-bridge--edit (and n (prefix-numeric-value n))))))
    (ediff-buffers (car bufs) (cdr bufs))))

;;;###autoload
(defun agent-bridge-log ()
  "Show the protocol traffic log (both directions) of the running bridge."
  (interactive)
  (if agent-bridge--connection
      (pop-to-buffer (jsonrpc-events-buffer agent-bridge--connection))
    (agent-bridge--message "the bridge is not running")))

;;;###autoload
(defun agent-bridge-close ()
  "Close the current session (it stays in the journal)."
  (interactive)
  (let ((s (agent-bridge--require-session)))
    (agent-bridge--call 'session/close (list :sessionId (agent-bridge--session-id s))
                        (lambda (result) (agent-bridge--session (agent-bridge--session-id s)
                                                                (plist-get result :session))))))

;;;###autoload
(defun agent-bridge-stop ()
  "Shut the bridge down; its sessions stay in the journal."
  (interactive)
  (let ((conn agent-bridge--connection))
    (when (and conn (jsonrpc-running-p conn))
      (jsonrpc-async-request conn :shutdown (make-hash-table)
                             :success-fn (lambda (_) (jsonrpc-notify conn :exit (make-hash-table)))
                             :error-fn (lambda (_) (jsonrpc-shutdown conn))
                             :timeout 10))))

(defun agent-bridge-running-p ()
  "Return non-nil while the bridge process is running."
  (and agent-bridge--connection (jsonrpc-running-p agent-bridge--connection)))

(provide 'agent-bridge)
;;; agent-bridge.el ends here
