import Testing

@testable import LiftoffSampler

@Suite("C++ short names")
struct CppNameTests {
    @Test(
        "a demangled C++ name reads like a Swift short name: no template arguments, parameter types, return type or qualifiers",
        arguments: [
            (
                "bool swift::RefCounts<swift::RefCountBitsT<(swift::RefCountInlinedness)1> >::doDecrementSlow<(swift::PerformDeinit)1>(swift::RefCountBitsT<(swift::RefCountInlinedness)1>, unsigned int)",
                "swift::RefCounts<…>::doDecrementSlow<…>(…)"
            ),
            (
                "swift::Demangle::__runtime::TypeDecoder<(anonymous namespace)::DecodedMetadataBuilder>::decodeMangledType(swift::Demangle::__runtime::Node*, unsigned int, bool)",
                "swift::Demangle::TypeDecoder<…>::decodeMangledType(…)"
            ),
            (
                "(anonymous namespace)::ConformanceCandidate::getMatchingType(swift::TargetMetadata<swift::InProcess> const*, bool) const",
                "(anonymous namespace)::ConformanceCandidate::getMatchingType(…)"
            ),
            (
                "swift_conformsToProtocolMaybeInstantiateSuperclasses(swift::TargetMetadata<swift::InProcess> const*, swift::TargetProtocolDescriptor<swift::InProcess> const*, bool)::$_2::operator()((anonymous namespace)::ConformanceSection const&) const",
                "swift_conformsToProtocolMaybeInstantiateSuperclasses(…)::$_2::operator()(…)"
            ),
            ("std::__1::vector<int, std::__1::allocator<int> >::push_back(int const&)", "std::vector<…>::push_back(…)"),
            ("icu_76::TimeZone::createDefault()", nil),
            ("icu_76::TimeZone::forLocaleOrDefault(icu_76::Locale const&)", "icu_76::TimeZone::forLocaleOrDefault(…)"),
            ("swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)", "swift::threading_impl::once_slow(…)"),
            ("std::less<void>::operator()<int&, int&>(int&, int&) const", "std::less<…>::operator()<…>(…)"),
            ("bool operator< <int>(Box<int> const&, Box<int> const&)", "operator<<…>(…)"),
            ("std::__1::basic_ostream<char>& std::__1::operator<<(std::__1::basic_ostream<char>&, char const*)", "std::operator<<(…)"),
            ("operator new(unsigned long)", "operator new(…)"),
            ("llvm::StringRef::operator std::string() const", "llvm::StringRef::operator std::string()"),
            ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(…)"),
            ("foo(int) [clone .cold]", "foo(…)"),
            ("read", nil),
            ("broken<(int", nil),
        ] as [(String, String?)])
    func short(full: String, expected: String?) {
        #expect(CppNameShortener.shortName(full) == expected)
    }
}
