// index_list: every index with its state and options (vector dimension and similarity live in options).
// params: none
// returns: name: string, type: string, state: string, labelsOrTypes: list<string>, properties: list<string>, options: map
// used by: kgqa.store.schema (store info, kgqa stats)
SHOW INDEXES YIELD name, type, state, labelsOrTypes, properties, options
RETURN name, type, state, labelsOrTypes, properties, options
