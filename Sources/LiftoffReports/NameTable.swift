/// Strings written once and referred to by index.
struct NameTable {
    private(set) var names: [String] = []
    private var indices: [String: Int] = [:]

    mutating func index(of name: String) -> Int {
        if let known = indices[name] { return known }
        names.append(name)
        indices[name] = names.count - 1
        return names.count - 1
    }
}
