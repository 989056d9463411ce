// meta_set_embedding_complete: records whether every keyed entity has an embedding from the recorded model.
// params: $complete: bool — true when an embedding run finished, false when one starts or entities were added
// returns: nothing
// notes: lets `kgqa ask` check the store is fully embedded without scanning the entity label;
//        a no-op on a store never embedded (no meta node).
// used by: kgqa.store.schema
MATCH (m:KgqaMeta {key: 'kgqa'})
SET m.embedding_complete = $complete
