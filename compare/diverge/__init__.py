"""Where it goes wrong: the operator graph of a compared run (:mod:`.graph`) and each operator's
verdict, the first divergence and the chain back to it (:mod:`.verdicts`), and the records they are
made of (:mod:`.records`)."""
