"""The format of the loopback server's replies file, as text: :mod:`scorers.testing` reads such files and the
``loopback`` command's help shows it, without importing the server (``python -m scorers`` starts faster).

>>> print(REPLIES_FORMAT.splitlines()[0])
replies file (--replies FILE): JSON Lines, one rule per line, tried in order before the
"""

__all__ = ["REPLIES_FORMAT"]

#: The ``--replies`` file of ``python -m scorers loopback``, read by :func:`scorers.testing.load_rules`.
REPLIES_FORMAT = """replies file (--replies FILE): JSON Lines, one rule per line, tried in order before the
automatic answer; a rule without "match" answers every request:
  {"match": "TEXT", "reply": REPLY, "times": N}
    match  a substring of the request's last user message (the rendered judge prompt)
    times  answer at most N matching requests, then let later rules answer (optional)
  REPLY is one of:
    {"choice": "C", "reasons": "same facts"}        a select_choice call (classifier and pairwise judges)
    {"tool": "grade_rubric", "arguments": {...}}    any other tool call
    {"json": {...}}                                 a JSON message (response_mode json, json_object)
    {"text": "..."}                                 a plain message (response_mode text)
    {"error": 400, "message": "..."}                an HTTP error (400 is rejected at once; 429, 5xx are retried)
example:
  {"match": "Venus is the closest planet", "reply": {"choice": "D", "reasons": "Mercury is"}}
"""
