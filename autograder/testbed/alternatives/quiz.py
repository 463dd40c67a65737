# Alternative answers for the quiz, in the `# %% grade_id` format that
# autograder/make_sample_class.py reads: right choices written the way a
# student might (a method call, indexing, a comment, single quotes).

# %% quiz_q1
# re-index, no retraining, and it can cite: C
q1 = "c".upper()

# %% quiz_q2
q2 = 'A'  # BM25 for the literal code

# %% quiz_q3
options = "ABCD"
q3 = options[-1]

# %% quiz_q4
q4 = chr(ord("A") + 3)  # Y: 2/62 beats 1/61

# %% quiz_q5
# starts 0, 80, ..., 2960 -> 38 windows
q5 = {30: "A", 39: "B", 38: "C", 37: "D"}[38]

# %% quiz_q6
q6 = " B ".strip()

# %% quiz_q7
q7 = "A"
# late interaction: encoded apart, MaxSim afterwards

# %% quiz_q8
q8 = "AB"[1]

# %% quiz_q9
q9 = str("D")

# %% quiz_q10
q10 = "".join(["A"])
