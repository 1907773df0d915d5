"""A failed savepoint's cause in Java's serialization format, byte for byte as Java 17
writes Flink 2.3's SerializedThrowable (the expected values were made by Java:
``InstantiationUtil.serializeObject(new SerializedThrowable(e))`` of a
``RuntimeException(message)`` with an empty stack trace)."""

from __future__ import annotations

from lockgate.dispatcher.rest.java_throwable import modified_utf8, serialized_throwable

ASCII = (
    "rO0ABXNyAClvcmcuYXBhY2hlLmZsaW5rLnV0aWwuU2VyaWFsaXplZFRocm93YWJsZWUWnfUfpxPzAgADTAAZZnVs"
    "bFN0cmluZ2lmaWVkU3RhY2tUcmFjZXQAEkxqYXZhL2xhbmcvU3RyaW5nO0wAFm9yaWdpbmFsRXJyb3JDbGFzc05h"
    "bWVxAH4AAVsAE3NlcmlhbGl6ZWRFeGNlcHRpb250AAJbQnhyABNqYXZhLmxhbmcuRXhjZXB0aW9u0P0fPho7HMQC"
    "AAB4cgATamF2YS5sYW5nLlRocm93YWJsZdXGNSc5d7jLAwAETAAFY2F1c2V0ABVMamF2YS9sYW5nL1Rocm93YWJs"
    "ZTtMAA1kZXRhaWxNZXNzYWdlcQB+AAFbAApzdGFja1RyYWNldAAeW0xqYXZhL2xhbmcvU3RhY2tUcmFjZUVsZW1l"
    "bnQ7TAAUc3VwcHJlc3NlZEV4Y2VwdGlvbnN0ABBMamF2YS91dGlsL0xpc3Q7eHBwdAA+amF2YS5sYW5nLlJ1bnRp"
    "bWVFeGNlcHRpb246IHRoZSBjaGVja3BvaW50IG9mIGl0cyBlcG9jaCBmYWlsZWR1cgAeW0xqYXZhLmxhbmcuU3Rh"
    "Y2tUcmFjZUVsZW1lbnQ7AkYqPDz9IjkCAAB4cAAAAABzcgAfamF2YS51dGlsLkNvbGxlY3Rpb25zJEVtcHR5TGlz"
    "dHq4F7Q8p57eAgAAeHB4dAA/amF2YS5sYW5nLlJ1bnRpbWVFeGNlcHRpb246IHRoZSBjaGVja3BvaW50IG9mIGl0"
    "cyBlcG9jaCBmYWlsZWQKdAAaamF2YS5sYW5nLlJ1bnRpbWVFeGNlcHRpb251cgACW0Ks8xf4BghU4AIAAHhwAAAB"
    "nqztAAVzcgAaamF2YS5sYW5nLlJ1bnRpbWVFeGNlcHRpb26eXwZHCjSD5QIAAHhyABNqYXZhLmxhbmcuRXhjZXB0"
    "aW9u0P0fPho7HMQCAAB4cgATamF2YS5sYW5nLlRocm93YWJsZdXGNSc5d7jLAwAETAAFY2F1c2V0ABVMamF2YS9s"
    "YW5nL1Rocm93YWJsZTtMAA1kZXRhaWxNZXNzYWdldAASTGphdmEvbGFuZy9TdHJpbmc7WwAKc3RhY2tUcmFjZXQA"
    "HltMamF2YS9sYW5nL1N0YWNrVHJhY2VFbGVtZW50O0wAFHN1cHByZXNzZWRFeGNlcHRpb25zdAAQTGphdmEvdXRp"
    "bC9MaXN0O3hwcQB+AAd0ACJ0aGUgY2hlY2twb2ludCBvZiBpdHMgZXBvY2ggZmFpbGVkdXIAHltMamF2YS5sYW5n"
    "LlN0YWNrVHJhY2VFbGVtZW50OwJGKjw8/SI5AgAAeHAAAAAAc3IAH2phdmEudXRpbC5Db2xsZWN0aW9ucyRFbXB0"
    "eUxpc3R6uBe0PKee3gIAAHhweA=="
)
UNICODE = (
    "rO0ABXNyAClvcmcuYXBhY2hlLmZsaW5rLnV0aWwuU2VyaWFsaXplZFRocm93YWJsZWUWnfUfpxPzAgADTAAZZnVs"
    "bFN0cmluZ2lmaWVkU3RhY2tUcmFjZXQAEkxqYXZhL2xhbmcvU3RyaW5nO0wAFm9yaWdpbmFsRXJyb3JDbGFzc05h"
    "bWVxAH4AAVsAE3NlcmlhbGl6ZWRFeGNlcHRpb250AAJbQnhyABNqYXZhLmxhbmcuRXhjZXB0aW9u0P0fPho7HMQC"
    "AAB4cgATamF2YS5sYW5nLlRocm93YWJsZdXGNSc5d7jLAwAETAAFY2F1c2V0ABVMamF2YS9sYW5nL1Rocm93YWJs"
    "ZTtMAA1kZXRhaWxNZXNzYWdlcQB+AAFbAApzdGFja1RyYWNldAAeW0xqYXZhL2xhbmcvU3RhY2tUcmFjZUVsZW1l"
    "bnQ7TAAUc3VwcHJlc3NlZEV4Y2VwdGlvbnN0ABBMamF2YS91dGlsL0xpc3Q7eHBwdAAyamF2YS5sYW5nLlJ1bnRp"
    "bWVFeGNlcHRpb246IE5VTAEgw7wg4oKsIO2gve2ypSBlbmR1cgAeW0xqYXZhLmxhbmcuU3RhY2tUcmFjZUVsZW1l"
    "bnQ7AkYqPDz9IjkCAAB4cAAAAABzcgAfamF2YS51dGlsLkNvbGxlY3Rpb25zJEVtcHR5TGlzdHq4F7Q8p57eAgAA"
    "eHB4dAAzamF2YS5sYW5nLlJ1bnRpbWVFeGNlcHRpb246IE5VTAEgw7wg4oKsIO2gve2ypSBlbmQKdAAaamF2YS5s"
    "YW5nLlJ1bnRpbWVFeGNlcHRpb251cgACW0Ks8xf4BghU4AIAAHhwAAABkqztAAVzcgAaamF2YS5sYW5nLlJ1bnRp"
    "bWVFeGNlcHRpb26eXwZHCjSD5QIAAHhyABNqYXZhLmxhbmcuRXhjZXB0aW9u0P0fPho7HMQCAAB4cgATamF2YS5s"
    "YW5nLlRocm93YWJsZdXGNSc5d7jLAwAETAAFY2F1c2V0ABVMamF2YS9sYW5nL1Rocm93YWJsZTtMAA1kZXRhaWxN"
    "ZXNzYWdldAASTGphdmEvbGFuZy9TdHJpbmc7WwAKc3RhY2tUcmFjZXQAHltMamF2YS9sYW5nL1N0YWNrVHJhY2VF"
    "bGVtZW50O0wAFHN1cHByZXNzZWRFeGNlcHRpb25zdAAQTGphdmEvdXRpbC9MaXN0O3hwcQB+AAd0ABZOVUwBIMO8"
    "IOKCrCDtoL3tsqUgZW5kdXIAHltMamF2YS5sYW5nLlN0YWNrVHJhY2VFbGVtZW50OwJGKjw8/SI5AgAAeHAAAAAA"
    "c3IAH2phdmEudXRpbC5Db2xsZWN0aW9ucyRFbXB0eUxpc3R6uBe0PKee3gIAAHhweA=="
)


def test_a_message_serializes_as_java_serializes_it():
    assert serialized_throwable("the checkpoint of its epoch failed") == ASCII
    assert serialized_throwable("NUL\x01 \u00fc \u20ac \U0001f4a5 end") == UNICODE


def test_modified_utf8_encodes_nul_in_two_bytes_and_astral_characters_as_surrogates():
    assert modified_utf8("\x00") == b"\xc0\x80"
    assert modified_utf8("\U0001f4a5") == b"\xed\xa0\xbd\xed\xb2\xa5"
    assert modified_utf8("a\u00fc") == b"a\xc3\xbc"


def test_a_long_message_is_cut_to_fit_a_java_string():
    assert len(serialized_throwable("x" * 100_000)) < 40_000
