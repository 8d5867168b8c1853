// Typed columns and the printers (p2pscope/output.hpp): a figure stored in its base unit
// shows in its column's unit in every format, and --format is read through one table.
#include <gtest/gtest.h>

#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"

using namespace p2pscope;
using namespace p2pscope::out;

namespace {

// 1 MiB in 8 us: 131072 bytes/us = 131.072 GB/s (1e9 bytes/s), cv 0.0512 = 5.1 %.
ResultTable one_row() {
  ResultTable t({{"size", Hint::size},
                 {"size_bytes", Hint::bytes},
                 {"time_us", Hint::duration, Unit::us, 2},
                 {"algbw_GBps", Hint::byte_rate, Unit::GBps, 2},
                 {"cv_pct", Hint::ratio, Unit::percent, 1},
                 {"check"}});
  t.add_row({std::uint64_t{1048576}, std::uint64_t{1048576}, 8000.0, 1048576.0 / 8000e-9, 0.0512, "ok"});
  return t;
}

Report report_of(ResultTable t) {
  Report r;
  r.text.emplace_back("# head\n");
  r.tables.push_back(t);
  r.text.emplace_back(std::move(t));
  return r;
}

}  // namespace

TEST(Output, UnitsConvertFromTheBaseUnit) {
  EXPECT_DOUBLE_EQ(unit_row(Unit::us).base_per_unit, 1e3);  // ns per us
  EXPECT_DOUBLE_EQ(unit_row(Unit::ms).base_per_unit, 1e6);
  EXPECT_DOUBLE_EQ(unit_row(Unit::s).base_per_unit, 1e9);
  EXPECT_DOUBLE_EQ(unit_row(Unit::GBps).base_per_unit, 1e9);  // GB/s = 1e9 bytes/s, not 2^30
  EXPECT_DOUBLE_EQ(unit_row(Unit::MBps).base_per_unit, 1e6);
  EXPECT_DOUBLE_EQ(unit_row(Unit::percent).base_per_unit, 0.01);
  EXPECT_EQ(unit_row(Unit::GBps).name, "GB/s");
  EXPECT_EQ(unit_row(Unit::us).hint, Hint::duration);
  EXPECT_EQ(unit_row(Unit::GBps).hint, Hint::byte_rate);
}

TEST(Output, TextShowsEachFigureInItsColumnsUnit) {
  const std::string text = make_text_printer()->print(report_of(one_row()));
  EXPECT_EQ(text.rfind("# head\n", 0), 0u) << text;
  EXPECT_NE(text.find("size  size_bytes  time_us  algbw_GBps  cv_pct  check\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1M" + std::string(7, ' ') + "1048576     8.00      131.07     5.1  ok\n"), std::string::npos)
      << text;
}

TEST(Output, CsvHasTheTextsFiguresAndOneHeader) {
  EXPECT_EQ(make_csv_printer()->print(report_of(one_row())),
            "size,size_bytes,time_us,algbw_GBps,cv_pct,check\n1M,1048576,8.00,131.07,5.1,ok\n");
  Report two = report_of(one_row());
  two.tables.push_back(one_row());
  EXPECT_THROW(make_csv_printer()->print(two), Error);
}

TEST(Output, JsonOfATableCarriesUnitsAndFullFigures) {
  const auto j = nlohmann::json::parse(make_json_printer()->print(report_of(one_row())));
  ASSERT_EQ(j["columns"].size(), 6u);
  EXPECT_EQ(j["columns"][2]["unit"], "us");
  EXPECT_EQ(j["columns"][2]["hint"], "duration");
  EXPECT_EQ(j["columns"][3]["unit"], "GB/s");
  EXPECT_EQ(j["columns"][4]["unit"], "%");
  const auto& row = j["rows"][0];
  EXPECT_EQ(row[0].get<std::uint64_t>(), 1048576u);
  EXPECT_DOUBLE_EQ(row[2].get<double>(), 8.0);
  EXPECT_NEAR(row[3].get<double>(), 131.072, 1e-9);
  EXPECT_NEAR(row[4].get<double>(), 5.12, 1e-9);
  EXPECT_EQ(row[5], "ok");
}

TEST(Output, JsonPrintsTheDocumentOnlyWhenAsked) {
  Report r = report_of(one_row());
  int built = 0;
  r.json = [&built] {
    ++built;
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["a"] = 2;
    return JsonDoc(std::move(j));
  };
  make_text_printer()->print(r);
  make_csv_printer()->print(r);
  EXPECT_EQ(built, 0) << "text and csv must not build the JSON document (it reads metadata and topology)";
  EXPECT_EQ(make_json_printer()->print(r), "{\n  \"schema_version\": 1,\n  \"a\": 2\n}\n");
  EXPECT_EQ(built, 1);
}

TEST(Output, TextOnlyPartsAreWrittenWhenPrinted) {
  Report r;
  int made = 0;
  r.text.emplace_back(TextFn([&made] { return ++made, std::string("lazy\n"); }));
  r.json = [] { return JsonDoc(nlohmann::json{{"k", 1}}); };
  EXPECT_EQ(make_json_printer()->print(r), "{\n  \"k\": 1\n}\n");
  EXPECT_EQ(made, 0);
  EXPECT_EQ(make_text_printer()->print(r), "lazy\n");
}

TEST(Output, AnEmptyOrTextCellInANumericColumnShowsAsIs) {
  ResultTable t({{"src", Hint::count}, {"time_us", Hint::duration, Unit::us, 2}, {"check"}});
  t.add_row({0, "n/a (no peer access)"});
  EXPECT_EQ(t.rendered().rows()[0][1], "n/a (no peer access)");
  EXPECT_EQ(t.rendered().rows()[0][2], "");
  EXPECT_TRUE(t.to_json()["rows"][0][2].is_null());
}

// A blank is for people: text shows "-" where CSV and JSON leave the cell empty.
TEST(Output, AnEmptyCellShowsItsColumnsBlankInTextOnly) {
  Report r;
  r.tables.push_back(ResultTable({{"side"}, {"lat_us", Hint::duration, Unit::us, 1, "-"}}));
  r.tables[0].add_row({"server"});
  r.text.emplace_back(r.tables[0]);
  EXPECT_NE(make_text_printer()->print(r).find("server  -"), std::string::npos) << make_text_printer()->print(r);
  EXPECT_EQ(make_csv_printer()->print(r), "side,lat_us\nserver,\n");
  EXPECT_TRUE(r.tables[0].to_json()["rows"][0][1].is_null());
}

// Several tables as CSV's one: a key column, the columns by name once, others' cells empty.
TEST(Output, StackedTablesShareColumnsByName) {
  ResultTable a({{"side"}, {"GB/s", Hint::byte_rate, Unit::GBps, 3}}), b({{"side"}, {"rounds", Hint::count}});
  a.add_row({"client", 2.5e9});
  b.add_row({"server", 3});
  const ResultTable t = stack("table", {{"channel", a}, {"total", b}});
  EXPECT_EQ(t.rendered(false).to_csv(), "table,side,GB/s,rounds\nchannel,client,2.500,\ntotal,server,,3\n");
}

// Every measuring command's JSON starts alike: schema_version, then the metadata block.
TEST(Output, MeasuredJsonStartsWithSchemaVersionThenMetadata) {
  const nlohmann::json meta = {{"argv", {"p2pscope"}}}, body = {{"a", 1}, {"b", {{"c", 2}}}};
  const nlohmann::ordered_json j = measured_json(meta, body);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema_version", "metadata", "a", "b"}));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["b"]["c"], 2);
  EXPECT_EQ(measured_json(meta, body).begin().value(), 1);
  EXPECT_EQ(std::next(measured_json(meta, body).begin()).key(), "metadata");
  EXPECT_THROW(measured_json(meta, {{"schema_version", 2}}), p2pscope::Error) << "the body may not move the head";
}

TEST(Output, FormatsComeFromOneTable) {
  EXPECT_EQ(format_choices({Format::text, Format::csv, Format::json}), "text, csv or json");
  EXPECT_EQ(format_choices({Format::text, Format::json, Format::html}), "text, json or html");
  EXPECT_EQ(find_format("csv", {Format::text, Format::csv}), Format::csv);
  EXPECT_FALSE(find_format("csv", {Format::text, Format::json}).has_value()) << "a format the command does not offer";
  EXPECT_FALSE(find_format("xml", {Format::text, Format::json}).has_value());
  EXPECT_EQ(format_names({Format::text, Format::json}), (std::vector<std::string>{"text", "json"}));
  for (const auto& row : kFormats) {
    const Output o(row.value);
    EXPECT_EQ(o.name(), row.name);
  }
  EXPECT_EQ(Output(Format::text).extension(), "txt");
  EXPECT_EQ(Output(Format::json).extension(), "json");
  EXPECT_TRUE(Output(Format::csv).one_table());
  EXPECT_FALSE(Output(Format::json).one_table());
  EXPECT_TRUE(Output(Format::text).shows_text());
  EXPECT_FALSE(Output(Format::csv).shows_text()) << "notes for people would break the CSV";
  EXPECT_FALSE(Output(Format::json).shows_text());
}

TEST(Output, HtmlIsTheReportsPage) {
  Report r;
  EXPECT_THROW(make_html_printer()->print(r), Error);
  r.html = [] { return std::string("<html></html>\n"); };
  EXPECT_EQ(make_html_printer()->print(r), "<html></html>\n");
}
