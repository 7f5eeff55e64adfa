// Number formatting, Markdown tables and the course's arithmetic (trainsim_report).

#include <gtest/gtest.h>

#include "report/format.h"
#include "report/report.h"

namespace trainsim::report {
namespace {

TEST(FormatSignificant, KeepsFourSignificantDigitsWithoutExponent) {
  EXPECT_EQ(format_significant(123.456), "123.5");
  EXPECT_EQ(format_significant(12.3456), "12.35");
  EXPECT_EQ(format_significant(1.23456), "1.235");
  EXPECT_EQ(format_significant(0.00123456), "0.001235");
  EXPECT_EQ(format_significant(98765.4), "98765");  // more integer digits than 4: no decimals
  EXPECT_EQ(format_significant(100), "100.0");
  EXPECT_EQ(format_significant(0), "0");
  EXPECT_EQ(format_significant(-2.5), "-2.500");
  EXPECT_EQ(format_significant(1.5e-9), "1.500e-09");  // below 1e-6: exponent form
  EXPECT_EQ(format_significant(9.99996), "10.00");     // rounding carries: still 4 digits
  EXPECT_EQ(format_significant(0.0999996), "0.1000");
}

TEST(FormatGib, DividesByTwoToTheThirty) {
  EXPECT_EQ(format_gib(8589934592.0), "8.00");  // 8 * 2^30
  EXPECT_EQ(format_gib(1.5e9), "1.40");         // 1.5e9 / 1073741824 = 1.397
}

TEST(WrapText, BreaksAtSpacesWithinTheWidth) {
  // Width 20: "the quick brown fox" is 19 columns; " jumps" would make 25.
  EXPECT_EQ(wrap_text("the quick brown fox jumps over the lazy dog", 20),
            "the quick brown fox\n"
            "jumps over the lazy\n"
            "dog");
  EXPECT_EQ(wrap_text("short", 20), "short");
  EXPECT_EQ(wrap_text("", 20), "");
  // Exactly the width fits: "aaaa bbbb" is 9 columns.
  EXPECT_EQ(wrap_text("aaaa bbbb cc", 9), "aaaa bbbb\ncc");
}

TEST(WrapText, PrefixesCountTowardsTheWidth) {
  // A list item: "- " first, "  " after; every line at most 16 columns.
  EXPECT_EQ(wrap_text("one two three four five six", 16, "- ", "  "),
            "- one two three\n"
            "  four five six");
  EXPECT_EQ(wrap_paragraph("a b"), "a b\n");
  EXPECT_EQ(wrap_bullet("a b"), "- a b\n");
  const std::string long_item = wrap_bullet(std::string(60, 'x') + " " + std::string(60, 'y'));
  EXPECT_EQ(long_item, "- " + std::string(60, 'x') + "\n  " + std::string(60, 'y') + "\n");
}

TEST(WrapText, NeverSplitsAWord) {
  // A word longer than the width stays whole on a line of its own.
  const std::string path = "reports/nvidia-h200-x1/profile.yaml";
  EXPECT_EQ(wrap_text("profile: " + path + " (measured)", 12, "- ", "  "),
            "- profile:\n"
            "  " + path + "\n"
            "  (measured)");
  EXPECT_EQ(wrap_text(path, 5), path);
}

TEST(WrapText, KeepsLineBreaksAndSpaces) {
  EXPECT_EQ(wrap_text("first line\nsecond line here", 11, "- ", "  "),
            "- first\n"
            "  line\n"
            "  second\n"
            "  line here");
  // Only the break's space becomes a newline: the words and the other spaces are as they were.
  EXPECT_EQ(wrap_text("a  b", 80), "a  b");
}

TEST(WrapText, NoLineStartsAMarkdownBlock) {
  // "-", "+", "*", "1.", ">" and "#" at a line's start would make a list item, quote or heading:
  // such a word stays on the line before it, past the width if need be.
  EXPECT_EQ(wrap_text("T(N,b) - T(1,b)/N", 8), "T(N,b) -\nT(1,b)/N");
  EXPECT_EQ(wrap_text("x + y", 2), "x +\ny");
  EXPECT_EQ(wrap_text("N * T", 2), "N *\nT");
  EXPECT_EQ(wrap_text("samples 50000. Next", 8), "samples 50000.\nNext");
  EXPECT_EQ(wrap_text("a >b c", 1), "a >b\nc");
  EXPECT_EQ(wrap_text("a # c", 1), "a #\nc");
  EXPECT_EQ(wrap_text("a --- c", 1), "a ---\nc");
  // Other words that start with those characters are fine at a line's start.
  EXPECT_EQ(wrap_text("a -> b -1 +- 2.5", 1), "a\n->\nb\n-1\n+-\n2.5");
}

TEST(TextTable, AlignsLabelsLeftAndNumbersRight) {
  TextTable table({"batch", "epoch_s"});
  table.add_row({"32", "1.5"});
  table.add_row({"2048", "OOM"});
  // Widths: column 0 = max(5, 2, 4) = 5, column 1 = max(7, 3, 3) = 7.
  EXPECT_EQ(table.to_markdown(),
            "| batch | epoch_s |\n"
            "| :---- | ------: |\n"
            "| 32    |     1.5 |\n"
            "| 2048  |     OOM |\n");
}

TEST(TextTable, RejectsARowOfTheWrongWidth) {
  TextTable table({"a", "b"});
  EXPECT_THROW(table.add_row({"1"}), std::logic_error);
}

TEST(CourseArithmetic, SpeedupEfficiencyAndWeakScalingForm) {
  // T(1,b) = 100 s, T(2,b) = 60 s.
  EXPECT_NEAR(speedup(100, 60), 1.6667, 1e-4);                  // 100 / 60
  EXPECT_NEAR(scaling_efficiency(100, 60, 2), 0.8333, 1e-4);    // 1.6667 / 2
  EXPECT_NEAR(weak_scaling_speedup(100, 60, 2), 3.3333, 1e-4);  // 2 * 100 / 60
}

TEST(CourseArithmetic, SubtractionMethodOfQ31) {
  // compute(2) = T(1,b) / 2 = 100 / 2 = 50; communication(2) = T(2,b) - 50 = 60 - 50 = 10.
  EXPECT_DOUBLE_EQ(perfect_split_compute_s(100, 2), 50);
  EXPECT_DOUBLE_EQ(implied_comm_s(100, 60, 2), 10);
  // Faster than ideal: T(4,b) = 20 < 100 / 4 = 25, so communication is 20 - 25 = -5.
  EXPECT_DOUBLE_EQ(implied_comm_s(100, 20, 4), -5);
}

TEST(CourseArithmetic, RingBytesPerEpochOfQ32) {
  // ResNet-18 CIFAR: 11,173,962 fp32 parameters = 44,695,848 bytes.
  // n = 2: 2(n-1)/n = 1, so 391 iterations move 391 * 44,695,848 = 17,476,076,568 bytes.
  EXPECT_DOUBLE_EQ(ring_bytes_per_epoch(391, 2, 44695848), 17476076568.0);
  // n = 4: 2 * 3 / 4 = 1.5; 98 iterations (ceil(50000 / 512)): 98 * 1.5 * 44,695,848
  // = 147 * 44,695,848 = 6,570,289,656 bytes.
  EXPECT_DOUBLE_EQ(ring_bytes_per_epoch(98, 4, 44695848), 6570289656.0);
  // n = 1: no communication.
  EXPECT_DOUBLE_EQ(ring_bytes_per_epoch(391, 1, 44695848), 0.0);
}

}  // namespace
}  // namespace trainsim::report
