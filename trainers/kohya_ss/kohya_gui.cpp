// The kohya_ss GUI's saved JSON as the run it launches (kohya_gui.hpp): every rule is data in
// trainers/kohya_ss/kohya_ss.json with the GUI file and line it comes from.
#include "segadvise/trainers/kohya_gui.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/facts.hpp"

namespace segadvise::kohya {

using nlohmann::json;
using nlohmann::ordered_json;

const json& gui_facts() {
  static const json j = trainer_data_file("kohya_ss.json");
  return j;
}

std::map<std::string, int> json_key_lines(const std::string& text) {
  std::map<std::string, int> out;
  int line = 1, depth = 0;
  bool in_string = false, escaped = false;
  std::string cur;
  int cur_line = 0;
  std::string last_string;
  int last_line = 0;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
        cur += c;
      } else if (c == '\\') {
        escaped = true;
        cur += c;
      } else if (c == '"') {
        in_string = false;
        last_string = cur;
        last_line = cur_line;
      } else {
        cur += c;
      }
      if (c == '\n') ++line;
      continue;
    }
    switch (c) {
      case '\n': ++line; break;
      case '"':
        in_string = true;
        cur.clear();
        cur_line = line;
        break;
      case '{': case '[': ++depth; last_string.clear(); break;
      case '}': case ']': --depth; last_string.clear(); break;
      case ':':
        if (depth == 1 && !last_string.empty() && !out.count(last_string)) out[last_string] = last_line;
        last_string.clear();
        break;
      case ',': last_string.clear(); break;
      default: break;
    }
  }
  return out;
}

namespace {

// Python's truth value of a JSON value as the GUI's code tests it
bool truthy(const ordered_json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  return !v.empty();
}

// float(x) as the GUI reads a number it compares (None, "" and text that is not a number: 0)
double number(const ordered_json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    try {
      size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return d;
    } catch (const std::exception&) {
    }
  }
  return 0;
}

std::string text_of(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  // an integral float as an integer: the GUI int()s the counts it writes (epoch, gradient_accumulation_steps, …)
  if (v.is_number_float() && std::isfinite(v.get<double>()) && std::fabs(v.get<double>()) < 1e15 &&
      v.get<double>() == std::floor(v.get<double>()))
    return std::to_string(static_cast<long long>(v.get<double>()));
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : " ") + text_of(e);
    return out;
  }
  return v.dump();
}

// Python's str() of a value in an f-string (network_args)
std::string python_str(const ordered_json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return text_of(v);
}

// str(x).replace('"', '').split()
ordered_json split_words(const ordered_json& v) {
  std::string s = text_of(v);
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  std::istringstream in(s);
  ordered_json out = ordered_json::array();
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> strings(const json& j, const char* field) {
  std::vector<std::string> out;
  if (j.contains(field))
    for (const auto& s : j.at(field)) out.push_back(s.get<std::string>());
  return out;
}

// whether a condition of kohya_ss.json holds for the GUI's values (`used` collects the keys it reads)
bool holds_in(const json& c, const ordered_json& gui, std::set<std::string>* used) {
  auto g = [&](const std::string& key) -> const ordered_json& {
    static const ordered_json null;
    if (used) used->insert(key);
    return gui.contains(key) ? gui.at(key) : null;
  };
  if (c.contains("when")) {
    bool any = false;
    for (const auto& k : c.at("when")) any = any || truthy(g(k.get<std::string>()));
    if (!any) return false;
  }
  if (c.contains("unless"))
    for (const auto& k : c.at("unless"))
      if (truthy(g(k.get<std::string>()))) return false;
  if (c.contains("if_keys"))
    for (const auto& k : c.at("if_keys"))
      if (!truthy(g(k.get<std::string>()))) return false;
  if (c.contains("positive")) {
    bool any = false;
    for (const auto& k : c.at("positive")) any = any || number(g(k.get<std::string>())) > 0;
    if (!any) return false;
  }
  if (c.contains("zero"))
    for (const auto& k : c.at("zero"))  // a key not in the file is at its widget value, not known here: not taken as 0
      if (g(k.get<std::string>()).is_null() || number(g(k.get<std::string>())) != 0) return false;
  const bool icase = c.value("ignore_case", false);
  auto str = [&](const std::string& k) {
    const json& v = g(k);
    const std::string s = v.is_string() ? v.get<std::string>() : text_of(v);
    return icase ? lower(s) : s;
  };
  if (c.contains("equals"))
    for (auto it = c.at("equals").begin(); it != c.at("equals").end(); ++it)
      if (str(it.key()) != it.value().get<std::string>()) return false;
  if (c.contains("not_equals"))
    for (auto it = c.at("not_equals").begin(); it != c.at("not_equals").end(); ++it)
      if (str(it.key()) == it.value().get<std::string>()) return false;
  if (c.contains("in"))
    for (auto it = c.at("in").begin(); it != c.at("in").end(); ++it)
      if (std::find(it.value().begin(), it.value().end(), json(str(it.key()))) == it.value().end()) return false;
  if (c.contains("not_in"))
    for (auto it = c.at("not_in").begin(); it != c.at("not_in").end(); ++it)
      if (std::find(it.value().begin(), it.value().end(), json(str(it.key()))) != it.value().end()) return false;
  if (c.contains("not_contains"))
    for (auto it = c.at("not_contains").begin(); it != c.at("not_contains").end(); ++it)
      if (str(it.key()).find(it.value().get<std::string>()) != std::string::npos) return false;
  if (c.contains("below"))
    for (auto it = c.at("below").begin(); it != c.at("below").end(); ++it)
      if (g(it.key()).is_null() || !(number(g(it.key())) < it.value().get<double>())) return false;
  if (c.contains("above"))
    for (auto it = c.at("above").begin(); it != c.at("above").end(); ++it)
      if (g(it.key()).is_null() || !(number(g(it.key())) > it.value().get<double>())) return false;
  return true;
}


class Translator {
 public:
  Translator(const ordered_json& j, const std::string& text, const std::string& path)
      : in_(j), path_(path), lines_(json_key_lines(text)), facts_(gui_facts()) {}

  GuiRun run() {
    choose_tab();
    migrate();
    const json& tab = tab_facts();
    apply_defaults(tab);
    unknown_keys(tab);
    refusals();
    script(tab);
    flags(tab);
    computed(tab);
    additional_parameters();
    accelerate();
    not_flags(tab);
    return std::move(r_);
  }

 private:
  const ordered_json& in_;
  std::string path_;
  std::map<std::string, int> lines_;
  const json& facts_;
  GuiRun r_;
  std::set<std::string> used_;  // GUI keys read into the run

  const ordered_json& g(const std::string& key) {
    static const ordered_json null;
    used_.insert(key);
    return r_.gui.contains(key) ? r_.gui.at(key) : null;
  }
  int line_of(const std::string& key) const {
    const auto it = lines_.find(key);
    return it == lines_.end() ? 0 : it->second;
  }
  std::string where(const std::string& key) const {
    const int l = line_of(key);
    return path_ + (l > 0 ? ":" + std::to_string(l) : "") + ": " + key;
  }
  const json& tab_facts() const {
    if (r_.tab == "textual_inversion") return facts_.at("tabs").at("dreambooth");
    return facts_.at("tabs").at(r_.tab);
  }

  std::set<std::string> params(const std::string& tab) const {
    const auto v = strings(facts_.at("tabs").at(tab), "params");
    return {v.begin(), v.end()};
  }

  // the tab that saved it: the keys only one tab's train_model has
  void choose_tab() {
    if (!in_.is_object()) throw InputError(path_ + ": a kohya_ss GUI config is a JSON object");
    const auto lora = params("lora"), db = params("dreambooth"), ft = params("finetune");
    auto only = [&](const std::set<std::string>& a, const std::set<std::string>& b, const std::set<std::string>& c) {
      std::vector<std::string> out;
      for (auto it = in_.begin(); it != in_.end(); ++it)
        if (a.count(it.key()) && !b.count(it.key()) && !c.count(it.key())) out.push_back(it.key());
      return out;
    };
    const auto l = only(lora, db, ft), d = only(db, lora, ft), f = only(ft, lora, db);
    std::vector<std::string> ti;
    for (const auto& k : strings(facts_.at("textual_inversion"), "markers"))
      if (in_.contains(k)) ti.push_back(k);
    size_t known = 0;
    for (auto it = in_.begin(); it != in_.end(); ++it)
      if (lora.count(it.key()) || db.count(it.key()) || ft.count(it.key())) ++known;
    const std::string src = facts_.at("tab_markers_source").get<std::string>();
    auto listed = [](const std::vector<std::string>& v) {
      std::string out;
      for (size_t i = 0; i < v.size() && i < 4; ++i) out += (i ? ", " : "") + v[i];
      return out + (v.size() > 4 ? ", …" : "");
    };
    if (in_.contains("LoRA_type")) {
      r_.tab = "lora";
      r_.tab_why = "LoRA_type: the LoRA tab's key";
    } else if (!ti.empty()) {
      r_.tab = "textual_inversion";
      r_.tab_why = "the textual-inversion keys " + listed(ti);
      r_.script_in_sources = false;
    } else if (!f.empty() && f.size() >= l.size()) {
      r_.tab = "finetune";
      r_.tab_why = "keys only the Finetune tab has: " + listed(f);
    } else if (!l.empty()) {
      r_.tab = "lora";
      r_.tab_why = "keys only the LoRA tab has: " + listed(l);
    } else if (!d.empty()) {
      r_.tab = "dreambooth";
      r_.tab_why = "keys only the DreamBooth tab has: " + listed(d);
    } else if (known > 0) {
      r_.tab = "dreambooth";
      r_.tab_guessed = true;
      r_.tab_why = "no key only one tab has: read as the DreamBooth tab's (a guess)";
    } else {
      throw InputError(path_ + ": no key of a kohya_ss GUI config (LoRA, DreamBooth or Finetune tab: " + src + ")");
    }
    if (!l.empty() && !f.empty())
      r_.warnings.push_back("keys of both the LoRA tab (" + listed(l) + ") and the Finetune tab (" + listed(f) + "): read as the " +
                            r_.tab + " tab's");
    r_.tab_why += " (" + src + ")";
  }

  // update_my_data (common_gui.py:379-509) as the GUI loads the file
  void migrate() {
    r_.gui = in_;
    const json& m = facts_.at("migrations");
    const std::string src = m.at("source").get<std::string>();
    ordered_json& gui = r_.gui;
    if (!gui.contains("optimizer") || gui.at("optimizer").is_null()) {
      const bool eight = gui.contains(m.at("optimizer_from").get<std::string>()) && truthy(gui.at(m.at("optimizer_from").get<std::string>()));
      gui["optimizer"] = eight ? "AdamW8bit" : "AdamW";
      if (in_.contains(m.at("optimizer_from").get<std::string>()))
        r_.notes.push_back("optimizer " + gui["optimizer"].get<std::string>() + " from use_8bit_adam (" + src + ")");
    }
    for (const char* table : {"int_keys", "int_keys_1", "int_keys_0b", "int_keys_75"}) {
      const json& t = m.at(table);
      for (const auto& kj : t.at("keys")) {
        const std::string k = kj.get<std::string>();
        if (!gui.contains(k) || gui.at(k).is_null() || !gui.at(k).is_string()) continue;
        const std::string s = gui.at(k).get<std::string>();
        long long v = 0;
        bool ok = false;
        try {
          size_t used = 0;
          v = std::stoll(s, &used);
          ok = used == s.size() && !s.empty();
        } catch (const std::exception&) {
        }
        if (!ok) {
          v = t.at("fallback").get<long long>();
          if (!s.empty())  // "" is how the GUI saves an empty number box
            r_.warnings.push_back(where(k) + " = \"" + brief_text(s) + "\" is not an integer: the GUI loads it as " + std::to_string(v) + " (" + src + ")");
        }
        gui[k] = v;
      }
    }
    for (const char* table : {"float_keys", "float_keys_1"}) {
      const json& t = m.at(table);
      for (const auto& kj : t.at("keys")) {
        const std::string k = kj.get<std::string>();
        if (!gui.contains(k) || !gui.at(k).is_string()) continue;
        const std::string s = gui.at(k).get<std::string>();
        double v = 0;
        bool ok = false;
        try {
          size_t used = 0;
          v = std::stod(s, &used);
          ok = used == s.size() && std::isfinite(v);
        } catch (const std::exception&) {
        }
        if (!ok) {
          v = t.at("fallback").get<double>();
          if (!s.empty())
            r_.warnings.push_back(where(k) + " = \"" + brief_text(s) + "\" is not a number: the GUI loads it as " + json(v).dump() + " (" + src + ")");
        }
        gui[k] = v;
      }
    }
    for (auto it = m.at("lora_type").begin(); it != m.at("lora_type").end(); ++it)
      if (gui.contains("LoRA_type") && gui.at("LoRA_type") == it.key()) {
        gui["LoRA_type"] = it.value();
        r_.notes.push_back("LoRA_type \"" + it.key() + "\" loads as \"" + it.value().get<std::string>() + "\" (" + src + ")");
      }
    if (gui.contains("xformers") && gui.at("xformers").is_boolean()) {
      gui["xformers"] = gui.at("xformers").get<bool>() ? "xformers" : "none";
      r_.notes.push_back("xformers " + std::string(in_.at("xformers").get<bool>() ? "true" : "false") + " loads as \"" +
                         gui["xformers"].get<std::string>() + "\" (" + src + ")");
    }
    for (const auto& k : strings(m, "removed"))
      if (gui.contains(k)) {
        if (gui.at(k) == "True") gui["log_with"] = "wandb";
        gui.erase(k);
      }
    for (auto it = m.at("renamed").begin(); it != m.at("renamed").end(); ++it)
      if (gui.contains(it.key())) {
        if (!gui.at(it.key()).is_null()) gui[it.value().get<std::string>()] = gui.at(it.key());
        gui.erase(it.key());
        r_.notes.push_back(it.key() + " loads as " + it.value().get<std::string>() + " (" + src + ")");
      }
  }

  void apply_defaults(const json& tab) {
    const auto p = strings(tab, "params");
    const std::set<std::string> ps(p.begin(), p.end());
    std::vector<std::string> set;
    for (const auto& d : facts_.at("defaults").at("values")) {
      const std::string k = d.at("key").get<std::string>();
      if (!ps.count(k) || (r_.gui.contains(k) && !r_.gui.at(k).is_null())) continue;
      r_.gui[k] = d.at("value");
      set.push_back(k + " " + text_of(ordered_json(d.at("value"))));
    }
    if (!set.empty()) {
      std::string s;
      for (const auto& x : set) s += (s.empty() ? "" : ", ") + x;
      r_.notes.push_back("not in the file, at the GUI's defaults: " + s + " (each default's panel file and line: kohya_ss.json \"defaults\"); " +
                         facts_.at("defaults").at("note").get<std::string>());
    }
  }

  void unknown_keys(const json& tab) {
    const auto p = strings(tab, "params");
    const std::set<std::string> ps(p.begin(), p.end());
    std::set<std::string> ti;
    if (r_.tab == "textual_inversion") {
      const auto m = strings(facts_.at("textual_inversion"), "markers");
      ti.insert(m.begin(), m.end());
    }
    const json& m = facts_.at("migrations");
    std::string list;
    for (auto it = in_.begin(); it != in_.end(); ++it) {
      const std::string& k = it.key();
      if (ps.count(k) || ti.count(k) || k == m.at("optimizer_from") || m.at("renamed").contains(k)) continue;
      bool removed = false;
      for (const auto& x : m.at("removed")) removed = removed || x == k;
      if (removed) continue;
      list += (list.empty() ? "" : ", ") + k + (line_of(k) ? " (line " + std::to_string(line_of(k)) + ")" : "");
    }
    if (!list.empty())
      r_.warnings.push_back(path_ + ": the GUI's " + r_.tab + " tab has no key " + list + ": ignored as it loads (" +
                            tab.at("params_source").get<std::string>() + ")");
  }

  bool holds(const json& c) { return holds_in(c, r_.gui, &used_); }

  void refusals() {
    const std::string tab = r_.tab;
    for (const auto& x : facts_.at("refusals")) {
      if (x.at("tab") != tab || !holds(x)) continue;
      std::string msg = x.at("message").get<std::string>();
      const std::string var = "{LoRA_type}";
      const auto at = msg.find(var);
      if (at != std::string::npos) msg.replace(at, var.size(), text_of(g("LoRA_type")));
      r_.refusals.push_back("the GUI stops: \"" + msg + "\" (" + x.at("source").get<std::string>() + ")");
    }
  }

  void script(const json& tab) {
    const json& scripts = r_.tab == "textual_inversion" ? facts_.at("textual_inversion") : tab;
    std::string s = scripts.at("default_script").get<std::string>();
    std::string by;
    for (const auto& e : scripts.at("scripts"))
      if (truthy(g(e.at(0).get<std::string>()))) {
        s = e.at(1).get<std::string>();
        by = e.at(0).get<std::string>();
        break;
      }
    r_.cl.script = s;
    r_.cl.script_line = by.empty() ? 0 : line_of(by);
    if (r_.tab == "textual_inversion")
      r_.warnings.push_back("a Textual Inversion tab config: " + s + " is a guess; " + facts_.at("textual_inversion").at("source").get<std::string>());
  }

  bool dropped(const ordered_json& v, const json& tab) const {
    if (v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_boolean() && !v.get<bool>())) return true;
    // the LoRA tab's `value not in ["", False, None]`: 0 == False
    return tab.at("drop") == "falsy" && v.is_number() && v.get<double>() == 0;
  }

  void set_flag(const std::string& flag, const ordered_json& v, const std::string& key, const json& tab) {
    if (dropped(v, tab)) return;
    if (v.is_array() && v.empty()) return;  // an empty list sets nothing
    r_.cl.values[flag] = text_of(v);
    r_.toml[flag] = v;
    if (!key.empty()) {
      r_.flag_key[flag] = key;
      if (line_of(key)) r_.cl.lines[flag] = line_of(key);
    }
  }

  void flags(const json& tab) {
    for (const auto& k : tab.at("same_name")) set_flag(k.get<std::string>(), g(k.get<std::string>()), k.get<std::string>(), tab);
    for (const auto& f : tab.at("flags")) {
      const std::string flag = f.at("flag").get<std::string>();
      const bool any = f.value("any", false);
      for (const auto& a : f.at("from")) {
        if (!holds(a)) continue;
        const std::string key = a.value("key", "");
        ordered_json v = a.contains("value") ? ordered_json(a.at("value")) : g(key);
        if (a.value("split", false) && !v.is_null()) v = split_words(v);
        if (any) {
          if (!truthy(v)) continue;
          v = true;
        }
        set_flag(flag, v, key, tab);
        break;
      }
    }
  }

  void computed(const json& tab) {
    // --train_inpainting off with the DiT checkboxes; on, it turns latent caching off
    bool inpaint = truthy(g("train_inpainting"));
    for (const auto& k : tab.at("inpainting_off_with")) inpaint = inpaint && !truthy(g(k.get<std::string>()));
    set_flag("train_inpainting", inpaint, "train_inpainting", tab);
    if (inpaint) {
      for (const char* k : {"cache_latents", "cache_latents_to_disk"})
        if (truthy(g(k))) r_.warnings.push_back(where(k) + ": train_inpainting turns latent caching off (" + tab.at("inpainting_source").get<std::string>() + ")");
    } else {
      set_flag("cache_latents", g("cache_latents"), "cache_latents", tab);
      set_flag("cache_latents_to_disk", g("cache_latents_to_disk"), "cache_latents_to_disk", tab);
    }
    // lr_warmup_steps: an absolute count wins, else the percent as a fraction (common_gui.py resolve_lr_warmup_steps)
    {
      const double steps = number(g("lr_warmup_steps")), pct = number(g("lr_warmup"));
      ordered_json v = 0;
      if (steps > 0) v = static_cast<long long>(steps);
      else if (pct != 0) {
        const double max_steps = number(g("max_train_steps"));
        if (r_.tab == "lora" && truthy(g("dataset_config")) && max_steps > 0) v = static_cast<long long>(std::llround(pct * max_steps / 100));
        else v = pct / 100;
      }
      set_flag("lr_warmup_steps", v, g("lr_warmup_steps").is_null() ? "lr_warmup" : "lr_warmup_steps", tab);
    }
    // the prompts go to <output_dir>/sample/prompt.txt, whose path is always passed
    {
      const std::string out = text_of(g("output_dir").is_null() ? ordered_json("") : g("output_dir"));
      const std::string rel = facts_.at("sample_prompts").at("path").get<std::string>();
      set_flag("sample_prompts", out.empty() ? rel : out + "/" + rel, "sample_prompts", tab);
    }
    if (tab.contains("in_json")) {
      const json& ij = tab.at("in_json");
      const bool latent = text_of(g(ij.at("use_latent_key").get<std::string>())) == ij.at("use_latent_value").get<std::string>();
      const std::string file = text_of(g(ij.at(latent ? "latent" : "caption").get<std::string>()));
      set_flag("in_json", text_of(g(ij.at("dir").get<std::string>())) + "/" + file, ij.at("dir").get<std::string>(), tab);
    }
    if (r_.tab == "lora") lora_network(tab);
    const json& w = g("max_data_loader_n_workers");
    if (!w.is_null()) {
      r_.cl.values["max_data_loader_n_workers"] = std::to_string(static_cast<long long>(number(w)));
      r_.toml["max_data_loader_n_workers"] = static_cast<long long>(number(w));
      if (line_of("max_data_loader_n_workers")) r_.cl.lines["max_data_loader_n_workers"] = line_of("max_data_loader_n_workers");
    }
    // Chroma: --apply_t5_attn_mask and --guidance_scale written even at 0
    if (r_.tab == "lora" && truthy(g("flux1_checkbox")) && lower(text_of(g("model_type"))) == "chroma") {
      r_.cl.values["apply_t5_attn_mask"] = "true";
      r_.cl.values["guidance_scale"] = text_of(ordered_json(number(g("guidance_scale"))));
      r_.toml["apply_t5_attn_mask"] = true;
      r_.toml["guidance_scale"] = number(g("guidance_scale"));
    }
    if (number(g("max_train_steps")) == 0 && !truthy(g("dataset_config")) && r_.tab == "lora")
      r_.notes.push_back("max_train_steps 0 without a dataset_config: the GUI counts the images in train_data_dir's N_name folders "
                         "when it launches and passes the steps it computes (lora_gui.py:1657-1731)");
  }

  // LoRA_type -> --network_module and --network_args (lora_gui.py:1821-2064), the learning rates -> the
  // trained parts (lora_gui.py:2066-2115)
  void lora_network(const json& tab) {
    const json& nm = facts_.at("network_modules");
    const std::string type = text_of(g("LoRA_type"));
    const json* entry = nullptr;
    for (const auto& e : nm.at("types"))
      for (const auto& t : e.at("types"))
        if (t == type) entry = &e;
    std::string args;
    if (!entry) {
      r_.warnings.push_back(where("LoRA_type") + " = \"" + brief_text(type) + "\" is none of the GUI's LoRA types: it sets no --network_module, "
                            "so sd-scripts trains its default networks.lora (" + nm.at("types").back().at("source").get<std::string>() + ")");
    } else {
      std::string module = entry->at("module").get<std::string>();
      if (entry->contains("module_with_sd3") && truthy(g("sd3_checkbox"))) module = entry->at("module_with_sd3").get<std::string>();
      r_.cl.values["network_module"] = module;
      r_.toml["network_module"] = module;
      r_.flag_key["network_module"] = "LoRA_type";
      if (line_of("LoRA_type")) r_.cl.lines["network_module"] = line_of("LoRA_type");
      if (entry->contains("args")) {  // an f-string of keys: a word whose key the file lacks takes the GUI's widget value, not known here
        std::istringstream words(entry->at("args").get<std::string>());
        std::vector<std::string> missing;
        for (std::string w; words >> w;) {
          const auto open = w.find('{'), close = w.find('}');
          if (open == std::string::npos || close == std::string::npos || close < open) {
            args += " " + w;
            continue;
          }
          const std::string k = w.substr(open + 1, close - open - 1);
          if (g(k).is_null()) {
            missing.push_back(k);
            continue;
          }
          args += " " + w.substr(0, open) + python_str(g(k)) + w.substr(close + 1);
        }
        if (!missing.empty()) {
          std::string list;
          for (const auto& k : missing) list += (list.empty() ? "" : ", ") + k;
          r_.notes.push_back("--network_args without " + list + ": not in the file, the GUI passes its widget values (not recorded here; " +
                             entry->at("source").get<std::string>() + ")");
        }
      }
      for (const auto& k : strings(*entry, "conv_args_for"))
        if (k == type) args += " conv_dim=" + python_str(g("conv_dim")) + " conv_alpha=" + python_str(g("conv_alpha"));
      for (const auto& k : strings(*entry, "truthy_args"))
        if (truthy(g(k))) args += " " + k + "=" + python_str(g(k));
      if (entry->value("dropout_args", false) || entry->value("native_loha_lokr", false)) {
        if (entry->value("native_loha_lokr", false)) {
          if (number(g("conv_dim")) > 0) args += " conv_dim=" + std::to_string(static_cast<long long>(number(g("conv_dim")))) + " conv_alpha=" + python_str(g("conv_alpha"));
          if (truthy(g("use_tucker"))) args += " use_tucker=True";
          if (type == "Kohya LoKr" && !g("factor").is_null() && static_cast<long long>(number(g("factor"))) != -1)
            args += " factor=" + std::to_string(static_cast<long long>(number(g("factor"))));
        }
        if (number(g("rank_dropout")) > 0) args += " rank_dropout=" + python_str(g("rank_dropout"));
        if (number(g("module_dropout")) > 0) args += " module_dropout=" + python_str(g("module_dropout"));
      }
    }
    for (const auto& k : strings(nm, "loraplus"))
      if (truthy(g(k))) args += " " + k + "=" + python_str(g(k));
    const ordered_json words = split_words(args);
    if (!words.empty()) {
      r_.cl.values["network_args"] = text_of(words);
      r_.toml["network_args"] = words;
      r_.flag_key["network_args"] = "LoRA_type";
      if (line_of("LoRA_type")) r_.cl.lines["network_args"] = line_of("LoRA_type");
    }
    // the learning rates
    const double te = number(g("text_encoder_lr")), unet = number(g("unet_lr")), t5 = number(g("t5xxl_lr"));
    if (te > 0) set_flag("text_encoder_lr", ordered_json::array({te, t5 > 0 ? t5 : te}), "text_encoder_lr", tab);
    if (unet != 0) set_flag("unet_lr", unet, "unet_lr", tab);
    const bool unet_only = truthy(g("hunyuan_image_checkbox")) || (te == 0 && unet != 0);
    const bool te_only = !truthy(g("hunyuan_image_checkbox")) && te != 0 && unet == 0;
    set_flag("network_train_unet_only", unet_only, unet_only && te != 0 ? "hunyuan_image_checkbox" : "text_encoder_lr", tab);
    set_flag("network_train_text_encoder_only", te_only, "unet_lr", tab);
  }

  // additional_parameters: quotes removed, split on whitespace, after --config_file (common_gui.py:1339-1342);
  // sd-scripts reads the command line over its --config_file
  void additional_parameters() {
    const std::string key = facts_.at("additional_parameters").at("key").get<std::string>();
    const json& v = g(key);
    if (!truthy(v)) return;
    const ordered_json words = split_words(v);
    const int line = line_of(key);
    std::string flag;       // the flag the words after it belong to
    bool has_value = false;  // it has one already: a further word is another of its values (nargs)
    for (const auto& wj : words) {
      const std::string w = wj.get<std::string>();
      if (w.rfind("--", 0) == 0 && w.size() > 2) {
        const auto eq = w.find('=');
        flag = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        has_value = eq != std::string::npos;
        r_.cl.values[flag] = has_value ? w.substr(eq + 1) : "true";
        r_.flag_key[flag] = key;
        if (line) r_.cl.lines[flag] = line;
      } else if (!flag.empty()) {
        std::string& v = r_.cl.values[flag];
        v = has_value ? v + " " + w : w;
        has_value = true;
      } else {
        r_.warnings.push_back(where(key) + ": \"" + brief_text(w) + "\" follows no flag: sd-scripts' argparse stops on it");
      }
    }
    r_.notes.push_back("additional_parameters \"" + brief_text(text_of(v)) + "\": flags on the command line, over the TOML (" +
                       facts_.at("additional_parameters").at("source").get<std::string>() + ")");
  }

  // accelerate launch: --num_processes when > 0, else accelerate's own config
  void accelerate() {
    const json& a = facts_.at("accelerate");
    const std::string src = a.at("source").get<std::string>();
    const json& extra = g(a.at("extra").get<std::string>());
    int n = 0;
    if (truthy(extra)) {
      const ordered_json w = split_words(extra);
      for (size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] == "--num_processes") n = static_cast<int>(number(w[i + 1]));
      r_.notes.push_back("extra_accelerate_launch_args \"" + brief_text(text_of(extra)) + "\" go to accelerate launch (" + src + ")");
    }
    const double np = number(g(a.at("num_processes").get<std::string>()));
    if (np > 0) n = static_cast<int>(std::min(np, 4096.0));
    if (n > 0) {
      r_.num_processes = n;
    } else {
      r_.num_processes = 1;
      r_.num_processes_set = false;
      r_.warnings.push_back("num_processes is not above 0: accelerate launch gets no --num_processes and its own config decides "
                            "(not in the file): read as 1 process, a guess (" + src + ")");
    }
  }

  // the tab's keys in the file that reach no flag
  void not_flags(const json& tab) {
    const auto p = strings(tab, "params");
    std::string list;
    int n = 0;
    for (const auto& k : p)
      if (in_.contains(k) && !used_.count(k)) {
        ++n;
        if (n <= 24) list += (list.empty() ? "" : ", ") + k;
      }
    if (n > 24) list += ", … (" + std::to_string(n) + " in all)";
    if (!list.empty())
      r_.notes.push_back("GUI keys that become no sd-scripts flag in the " + r_.tab + " tab (its config_toml_data, " +
                         tab.at("config_toml_data").get<std::string>() + "): " + list);
  }
};

}  // namespace

GuiRun translate_gui_json(const ordered_json& j, const std::string& text, const std::string& path) {
  return Translator(j, text, path).run();
}

namespace {

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string toml_value(const ordered_json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    std::string t = text_of(v);  // an integral float as the GUI's int()
    return t;
  }
  if (v.is_array()) {
    std::string out = "[";
    for (const auto& e : v) out += (out.size() > 1 ? ", " : "") + toml_value(e);
    return out + "]";
  }
  return toml_string(v.is_string() ? v.get<std::string>() : v.dump());
}

}  // namespace

readers::CommandLine launch_command(const GuiRun& run, const std::string& name) {
  readers::CommandLine cl;
  cl.script = run.cl.script;
  cl.script_line = run.cl.script_line;
  const std::string extra = gui_facts().at("additional_parameters").at("key").get<std::string>();
  std::string text;
  for (auto it = run.toml.begin(); it != run.toml.end(); ++it) {
    if (it.key() == "dataset_config") continue;  // on the command line: read beside the JSON
    text += it.key() + " = " + toml_value(it.value()) + "\n";
  }
  for (const auto& [flag, value] : run.cl.values) {
    const auto k = run.flag_key.find(flag);
    if ((k != run.flag_key.end() && k->second == extra) || flag == "dataset_config") {
      cl.values[flag] = value;
      const auto l = run.cl.lines.find(flag);
      if (l != run.cl.lines.end()) cl.lines[flag] = l->second;
    }
  }
  cl.values["config_file"] = name;
  ShellWrittenFile f;
  f.text = text;
  f.line = run.cl.script_line;
  cl.written_files[name] = f;
  return cl;
}

std::string gui_key_for(const GuiRun& run, const std::string& flag) {
  const auto it = run.flag_key.find(flag);
  if (it != run.flag_key.end() && it->second != gui_facts().at("additional_parameters").at("key")) return it->second;
  const json& tab = gui_facts().at("tabs").at(run.tab == "textual_inversion" ? "dreambooth" : run.tab);
  for (const auto& k : tab.at("same_name"))
    if (k == flag) return flag;
  for (const char* k : {"cache_latents", "cache_latents_to_disk", "train_inpainting"})
    if (flag == k) return flag;
  for (const auto& f : tab.at("flags")) {
    if (f.at("flag") != flag) continue;
    for (const auto& a : f.at("from"))
      if (a.contains("key") && holds_in(a, run.gui, nullptr)) return a.at("key").get<std::string>();
  }
  return "";
}

std::vector<std::string> gui_rate_keys_for(const GuiRun& run, const std::string& flag) {
  const json& tab = gui_facts().at("tabs").at(run.tab == "textual_inversion" ? "dreambooth" : run.tab);
  for (const auto& f : tab.at("flags")) {
    if (f.at("flag") != flag) continue;
    for (const auto& a : f.at("from")) {
      if (!a.contains("positive") || a.contains("key")) continue;
      json when = a;
      when.erase("positive");
      if (holds_in(when, run.gui, nullptr)) return strings(a, "positive");
    }
  }
  return {};
}

GuiRun translate_gui_file(const std::string& path) {
  const std::string text = read_input_file(path, "config");
  const ordered_json j = parse_ordered_json_text(text, path);
  return translate_gui_json(j, text, path);
}

}  // namespace segadvise::kohya
