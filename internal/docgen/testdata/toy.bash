# bash completion for toy, generated from its command-line model.

_toy_commands() { # the commands below the command path $1
	case $1 in
	'') echo 'gen fleet' ;;
	'fleet') echo 'merge' ;;
	esac
}

_toy_flags() { # the flags accepted at the command path $1
	case $1 in
	'') echo '-h --help --root -v --verbose' ;;
	'gen') echo '--style -o --output --map --color --no-color -h --help --root -v --verbose' ;;
	'fleet') echo '-h --help --root -v --verbose' ;;
	'fleet merge') echo '--name -h --help --root -v --verbose' ;;
	esac
}

_toy_value() { # complete the value of flag $2 at command path $1; fails for a flag that takes none
	local cur=$3
	case "$1|$2" in
	'|--root') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	'gen|--style') mapfile -t COMPREPLY < <(compgen -W 'plain fancy' -- "$cur") ;;
	'gen|-o' | 'gen|--output') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	'gen|--map') COMPREPLY=() ;;
	'gen|--root') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	'fleet|--root') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	'fleet merge|--name') COMPREPLY=() ;;
	'fleet merge|--root') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	'fleet merge|') compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	*) return 1 ;;
	esac
}

_toy() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local path="" i w skip=""
	# The command path so far: command words, skipping flags and their
	# values (bash splits --flag=value at the '=').
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $skip ]]; then
			skip=""
			[[ $w == "=" ]] && skip=1
			continue
		fi
		case $w in
		-*) COMPREPLY=(); _toy_value "$path" "$w" "" && skip=1 ;;
		*) [[ " $(_toy_commands "$path") " == *" $w "* ]] && path=${path:+$path }$w ;;
		esac
	done
	if [[ $cur == "=" ]]; then
		cur=""
	elif [[ $prev == "=" ]]; then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	fi
	if [[ $prev == -* ]] && _toy_value "$path" "$prev" "$cur"; then
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_toy_flags "$path")" -- "$cur")
	elif ! _toy_value "$path" "" "$cur"; then
		mapfile -t COMPREPLY < <(compgen -W "$(_toy_commands "$path")" -- "$cur")
	fi
}
complete -F _toy toy
