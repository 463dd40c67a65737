"""Which of ragkit's functions give a task its answer, and what a student is
told when their function runs one.

A task's function must not run ragkit's function of the same name, nor the
ones listed for it in TWINS (ragkit functions that hand the task its answer
under another name: found by calling each and seeing which names ran, with
ragkit_watch, and checked route by route in tests/test_ragkit_watch.py).
None of them is a piece a task's text tells the student to use. The judge
(judge.py) fails a graded test with this message; the student's check
(check/validate.py) fails the visible test with the same one, so the
surprise comes before the hand-in, not in the grade.
"""

TWINS = {
    "answer_table": {"grade_answers"},                   # 01
    "split_into_sentences": {"split_sentences"},         # 02
    "rag_sequence": {"log_rag_sequence"},
    "rag_token": {"log_rag_token"},
    "ceiling_table": {"ceiling_curve"},
    "storage_table": {"overlap_storage"},                # 03
    "ivf_search": {"search"},                            # IVFIndex.search
    "bm25_idf": {"idf"},                                 # 04: BM25Index.idf
    "bm25_scores": {"scores", "weights"},                # BM25Index's
    "maxsim": {"maxsim_many"},                           # 05
    "maxsim_rerank": {"rerank", "rerank_vectors", "maxsim_many"},
    "grounded_answer": {"best_sentence"},                # 06
    "mrr": {"first_relevant_rank"},                      # 07
    "chunk_size_study": {"question_scores"},             # retrieval.evaluate's
    "refresh": {"refresh_index"},                        # 08
    "search_as": {"filtered_search"},
    "score_step": {"score_questions"},                   # 09
    "run_ablation": {"question_runs"},
}


def forbidden(name: str) -> list[str]:
    """The ragkit function names a call of the task function `name` must not reach."""
    return sorted({name, *TWINS.get(name, ())})


def delegated(name: str, ran: list[str]) -> str:
    """What a test says when `name` ran ragkit's functions `ran`."""
    which = f"ragkit's {', '.join(ran)}" if ran else "ragkit's own piece"
    return (f"{name} runs {which}, which gives what this task asks you to build; "
            "write it yourself (calling ragkit is fine where a task says so)")
