// link_relation_names: the names of the graph's relation types, which the linker reads as words.
// params: $limit: int — cap on rows
// returns: name: string, source_name: string
// notes: a question word found among them ("language", "currency") describes the relation asked
//        for rather than naming the topic.
// used by: kgqa.linking_words
MATCH (r:RelationType)
RETURN r.name AS name, r.source_name AS source_name
ORDER BY name
LIMIT $limit
